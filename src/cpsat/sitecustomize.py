"""solvergate's start-up hook, beside the helper on the path of a script
solvergate runs cold (and of its warm forkers, before they import OR-Tools).

Python imports `sitecustomize` as it starts. This one loads the helper
beside it under a private name, so every `CpSolver` remembers whether the
model it last solved had an objective before the script imports anything
(see solvergate.py), then runs the `sitecustomize` it shadows, if there is
one further along the path, as Python would have. A failure here is said on
stderr and never stops the script.
"""

import os
import sys

_SOLVERGATE_SITE = True


def _solvergate_start():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        path = os.path.join(here, "solvergate.py")
        with open(path, "rb") as handle:
            code = compile(handle.read(), path, "exec")
        module = type(sys)("_solvergate_boot")
        module.__file__ = path
        sys.modules["_solvergate_boot"] = module
        exec(code, module.__dict__)
    except Exception as error:  # noqa: BLE001 - the script runs regardless
        sys.modules.pop("_solvergate_boot", None)
        sys.stderr.write("solvergate: the objective tracker did not start: %s\n" % error)
    try:
        import importlib.machinery

        path = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
        while True:
            spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
            if spec is None or spec.loader is None or not spec.origin:
                return
            try:
                with open(spec.origin, "rb") as handle:
                    ours = b"_SOLVERGATE_SITE = True" in handle.read()
            except OSError:
                ours = False
            if not ours:
                break
            # Another copy of this hook (an inherited PYTHONPATH): skip it.
            found = os.path.dirname(os.path.abspath(spec.origin))
            rest = [entry for entry in path if os.path.abspath(entry or os.curdir) != found]
            if len(rest) == len(path):
                return
            path = rest
        import importlib.util

        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)
    except Exception as error:  # noqa: BLE001 - as site.py reports it
        sys.stderr.write(
            "Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s\n" % (type(error).__name__, error)
        )


_solvergate_start()
