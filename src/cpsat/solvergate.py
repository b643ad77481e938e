"""solvergate's envelope helper, on the path of every script solvergate runs.

One line at the end of a solve prints the answer the way the tools read it:

    import solvergate
    status = solver.Solve(model)
    solvergate.report(solver, status, {"x": x, "starts": starts})

`report` maps CP-SAT's status (OPTIMAL, FEASIBLE, INFEASIBLE, MODEL_INVALID,
UNKNOWN) to the envelope's words, turns variables, expressions and
(nested) lists or dicts of them into values, reads the objective only when
the model has one, and prints the JSON envelope as the last stdout line.
Inside a solution callback, `report_intermediate(self, {...})` prints an
intermediate envelope, which is what a timeout recovers.

Which model had an objective: CP-SAT's answer alone cannot say (without an
objective it reads 0, as an objective of 0 does). In the interpreters
solvergate starts, this module is loaded before the script runs and wraps
`CpSolver.solve` (which `Solve` and `SearchForAllSolutions` call), so every
solver, and every solution callback passed to it, remembers whether the model
it last solved had one. `model=` still says it outright and wins. Where
neither tells (a solve this wrapper did not see) and the answer's objective
and bound both read 0, the objective is not guessed: it is `null`, a line on
stderr says why, and the envelope carries `objective_unread` with the reason,
which the tools turn into an `objective_unread` diagnostic.

Scripts that print the envelope by hand keep working; this is a shortcut.
"""

# Only `sys` at load: the helper is loaded as every interpreter solvergate
# starts, before the script, so what it needs later is imported later.
import sys

_STATUS = {
    "OPTIMAL": "optimal",
    "FEASIBLE": "feasible",
    "INFEASIBLE": "infeasible",
    "MODEL_INVALID": "error",
    "UNKNOWN": "unknown",
}

#: The module whose solver this helper follows.
_CP_MODEL = "ortools.sat.python.cp_model"
#: Where, on that module, solvers and callbacks are remembered: shared by
#: every copy of this helper in one interpreter.
_REGISTRY = "_solvergate_solved"
#: The solving methods wrapped, where the class defines them itself.
_SOLVES = ("solve", "Solve", "SolveWithSolutionCallback", "SearchForAllSolutions")
_MISSING = object()
_FIX = "pass model=model to solvergate.%s (or objective=...)"


def _status_word(solver, status):
    name = None
    try:
        name = solver.StatusName(status)
    except Exception:
        name = str(status)
    return _STATUS.get(str(name).upper(), "unknown")


def _value(source, item):
    if item is None or isinstance(item, (bool, int, float, str)):
        return item
    if isinstance(item, dict):
        return {str(key): _value(source, value) for key, value in item.items()}
    if isinstance(item, (list, tuple, range)):
        return [_value(source, value) for value in item]
    try:
        return source.Value(item)
    except Exception:
        pass
    try:
        return source.BooleanValue(item)
    except Exception:
        return str(item)


def _has_objective(model):
    """True or False when `model` says whether it has an objective; None
    when it cannot be asked (not a CpModel, or asking failed)."""
    if model is None:
        return None
    for name in ("has_objective", "HasObjective"):
        try:
            method = getattr(model, name, None)
            if callable(method):
                return bool(method())
        except Exception:
            pass
    try:
        proto = model.Proto()
        return proto.HasField("objective") or proto.HasField("floating_point_objective")
    except Exception:
        return None


def _read(source, prop, method):
    """A number of the answer: the property (OR-Tools 9.8 on), else the
    method of older releases; None when neither reads."""
    try:
        value = getattr(source, prop)
        return value() if callable(value) else value
    except Exception:
        pass
    try:
        return getattr(source, method)()
    except Exception:
        return None


def _finite(number):
    if number is None:
        return None
    number = float(number)
    if number != number or number in (float("inf"), float("-inf")):
        return None
    return int(number) if number.is_integer() else number


def _number(value):
    """`_finite`, or None for what is not a number (a duck-typed solver's)."""
    try:
        return _finite(value)
    except Exception:
        return None


def _print(envelope):
    import json

    print(json.dumps(envelope), flush=True)


# --- which model each solver solved ------------------------------------------


def _registry(module, create=False):
    if module is None:
        return None
    try:
        import weakref

        registry = getattr(module, _REGISTRY, None)
        if not isinstance(registry, weakref.WeakKeyDictionary):
            registry = None
        if registry is None and create:
            registry = weakref.WeakKeyDictionary()
            setattr(module, _REGISTRY, registry)
        return registry
    except Exception:
        return None


def _remember(registry, key, note):
    try:
        registry[key] = note
    except Exception:  # not weakly referable: nothing remembered
        pass


def _wrap(original, registry):
    import functools

    @functools.wraps(original)
    def solve(self, model, *args, **kwargs):
        note = _has_objective(model)
        callback = args[0] if args else kwargs.get("solution_callback", kwargs.get("callback"))
        try:
            previous = registry.get(self, _MISSING)
        except Exception:
            previous = _MISSING
        _remember(registry, self, note)
        if callback is not None:
            _remember(registry, callback, note)
        try:
            return original(self, model, *args, **kwargs)
        except BaseException:
            # The solver still holds its previous answer.
            try:
                if previous is _MISSING:
                    registry.pop(self, None)
                else:
                    registry[self] = previous
            except Exception:
                pass
            raise

    solve._solvergate_wraps = original
    return solve


def _install(module):
    """Wraps the solving methods of `module.CpSolver`, once."""
    try:
        solver_class = module.CpSolver
        registry = _registry(module, create=True)
        if registry is None:
            return
        for name in _SOLVES:
            original = solver_class.__dict__.get(name)
            if not callable(original) or hasattr(original, "_solvergate_wraps"):
                continue
            setattr(solver_class, name, _wrap(original, registry))
    except Exception:
        pass


class _Loader:
    """The real loader of cp_model, which installs the wrapper once the
    module has run."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            module.__loader__ = self._loader
            module.__spec__.loader = self._loader
        except Exception:
            pass
        _unwatch()
        _install(module)

    def __getattr__(self, name):
        if name == "_loader":  # a copy made without __init__
            raise AttributeError(name)
        return getattr(self._loader, name)


class _Watch:
    """Finds nothing itself: when cp_model is imported, hands the real
    finder's spec back with a loader that installs the wrapper."""

    _solvergate_watch = True

    def find_spec(self, name, path=None, target=None):
        if name != _CP_MODEL:
            return None
        for finder in list(sys.meta_path):
            if getattr(finder, "_solvergate_watch", False):
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader)
        return spec


def _unwatch():
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "_solvergate_watch", False)]


def _track():
    """Follows solves from now on: at once if cp_model is loaded, else when
    it is imported."""
    try:
        module = sys.modules.get(_CP_MODEL)
        if module is not None:
            _install(module)
        elif not any(getattr(f, "_solvergate_watch", False) for f in sys.meta_path):
            sys.meta_path.insert(0, _Watch())
    except Exception:
        pass


def _objective_known(source, model, who):
    """(has an objective?, why it cannot be told or None) for the answer
    `source` (a solver or a solution callback) holds."""
    told = _has_objective(model)
    if told is not None:
        return told, None
    registry = _registry(sys.modules.get(_CP_MODEL))
    note = None
    if registry is not None:
        try:
            note = registry.get(source)
        except Exception:
            note = None
    if note is not None:
        return note, None
    # A solve not seen: a model without an objective reads 0 and bound 0,
    # so anything else proves there is one.
    value = _number(_read(source, "objective_value", "ObjectiveValue"))
    bound = _number(_read(source, "best_objective_bound", "BestObjectiveBound"))
    if (value is not None and value != 0) or (bound is not None and bound != 0):
        return True, None
    kind = "solution callback" if who == "report_intermediate" else "CpSolver"
    return False, (
        "solvergate could not tell whether the model this %s solved has an objective "
        "(its solve was not seen: a solve method replaced or bypassed, or an interpreter "
        "solvergate did not start), and nothing in its answer proves one (without an "
        "objective CP-SAT reads 0, as an objective of 0 does); objective is null — %s"
        % (kind, _FIX % who)
    )


def _has_solved(solver):
    """False only when the solver says it has not solved anything yet."""
    try:
        solver.response_proto
    except RuntimeError:
        return False
    except Exception:
        pass
    return True


_warned = set()


def _warn(who, reason):
    """Says it on stderr, once per reason (a callback reports often)."""
    if (who, reason) in _warned:
        return
    _warned.add((who, reason))
    try:
        print("solvergate.%s: %s" % (who, reason), file=sys.stderr, flush=True)
    except Exception:
        pass


def report(solver, status, solution, model=None, objective=None, bound=None):
    """Prints the final envelope. The objective is read when the model has
    one: `model=` says so, else the model this solver last solved; an
    explicit `objective=` is used as given."""
    word = _status_word(solver, status)
    found = word in ("optimal", "feasible")
    unread = None
    if found and not _has_solved(solver):
        unread = (
            "this CpSolver has not solved a model, so neither its values nor its objective "
            "can be read; status error — pass the solver whose solve() returned the status"
        )
        word, found = "error", False
    values = _value(solver, solution) if found else {}
    if objective is None and found:
        has, unread = _objective_known(solver, model, "report")
        if has:
            objective = _read(solver, "objective_value", "ObjectiveValue")
            if bound is None:
                bound = _read(solver, "best_objective_bound", "BestObjectiveBound")
    envelope = {
        "status": word,
        "objective": _finite(objective) if found else None,
        "solution": values if isinstance(values, dict) else {"value": values},
    }
    if bound is not None and found:
        envelope["best_objective_bound"] = _finite(bound)
    if unread is not None:
        envelope["objective_unread"] = unread
        _warn("report", unread)
    _print(envelope)
    return envelope


def report_intermediate(callback, solution, objective=None, optimising=None, model=None):
    """From a CpSolverSolutionCallback: prints this solution as an
    intermediate envelope (status feasible). The objective is read when the
    model has one: `optimising=` or `model=` say so, else the model the
    solve that called this callback was given."""
    unread = None
    if objective is None:
        if optimising is None:
            optimising, unread = _objective_known(callback, model, "report_intermediate")
        if optimising:
            objective = _read(callback, "objective_value", "ObjectiveValue")
    values = _value(callback, solution)
    envelope = {
        "status": "feasible",
        "objective": _finite(objective),
        "solution": values if isinstance(values, dict) else {"value": values},
    }
    if unread is not None:
        envelope["objective_unread"] = unread
        _warn("report_intermediate", unread)
    _print(envelope)
    return envelope


_track()

if __name__ == "__main__":
    sys.exit("solvergate.py is a helper for scripts: `import solvergate`")
