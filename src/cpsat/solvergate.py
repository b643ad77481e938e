"""solvergate's envelope helper, on the path of every script solvergate runs.

One line at the end of a solve prints the answer the way the tools read it:

    import solvergate
    status = solver.Solve(model)
    solvergate.report(solver, status, {"x": x, "starts": starts}, model=model)

`report` maps CP-SAT's status (OPTIMAL, FEASIBLE, INFEASIBLE, MODEL_INVALID,
UNKNOWN) to the envelope's words, turns variables, expressions and
(nested) lists or dicts of them into values, reads the objective only when
the model has one, and prints the JSON envelope as the last stdout line.
Inside a solution callback, `report_intermediate(self, {...})` prints an
intermediate envelope, which is what a timeout recovers.

Scripts that print the envelope by hand keep working; this is a shortcut.
"""

import json
import math
import sys

_STATUS = {
    "OPTIMAL": "optimal",
    "FEASIBLE": "feasible",
    "INFEASIBLE": "infeasible",
    "MODEL_INVALID": "error",
    "UNKNOWN": "unknown",
}


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
    if model is None:
        return None
    try:
        return model.Proto().HasField("objective") or model.Proto().HasField("floating_point_objective")
    except Exception:
        try:
            return bool(model.HasObjective())
        except Exception:
            return None


def _finite(number):
    if number is None:
        return None
    number = float(number)
    if math.isnan(number) or math.isinf(number):
        return None
    return int(number) if number.is_integer() else number


def _print(envelope):
    print(json.dumps(envelope), flush=True)


def report(solver, status, solution, model=None, objective=None, bound=None):
    """Prints the final envelope. `model` tells whether there is an
    objective (without it, `objective=` is used as given, else none)."""
    word = _status_word(solver, status)
    found = word in ("optimal", "feasible")
    values = _value(solver, solution) if found else {}
    if objective is None and found and _has_objective(model):
        objective = solver.ObjectiveValue()
        if bound is None:
            bound = solver.BestObjectiveBound()
    envelope = {
        "status": word,
        "objective": _finite(objective) if found else None,
        "solution": values if isinstance(values, dict) else {"value": values},
    }
    if bound is not None and found:
        envelope["best_objective_bound"] = _finite(bound)
    _print(envelope)
    return envelope


def report_intermediate(callback, solution, objective=None, optimising=True):
    """From a CpSolverSolutionCallback: prints this solution as an
    intermediate envelope (status feasible)."""
    if objective is None and optimising:
        try:
            objective = callback.ObjectiveValue()
        except Exception:
            objective = None
    values = _value(callback, solution)
    envelope = {
        "status": "feasible",
        "objective": _finite(objective),
        "solution": values if isinstance(values, dict) else {"value": values},
    }
    _print(envelope)
    return envelope


if __name__ == "__main__":
    sys.exit("solvergate.py is a helper for scripts: `import solvergate`")
