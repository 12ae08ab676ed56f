import taskgate


def test_all_matches_exported_names() -> None:
    public = {n for n in vars(taskgate) if not n.startswith("_")} - {
        "core",
        "protocol",
        "errors",
        "cli",
        "agents",
        "arms",
        "episodes",
        "runner",
        "rundir",
        "scoring",
        "llm",
        "integrations",  # optional extras, imported from their own modules
    }
    assert set(taskgate.__all__) == public | {"__version__"}
    for name in taskgate.__all__:
        assert hasattr(taskgate, name), name


def test_exception_tree_has_one_root() -> None:
    for exc in (
        taskgate.PlanError,
        taskgate.UnknownStepError,
        taskgate.CycleError,
        taskgate.WorkOrderError,
        taskgate.LedgerFormatError,
        taskgate.ModelError,
    ):
        assert issubclass(exc, taskgate.TaskgateError)
        assert issubclass(exc, ValueError) or exc is taskgate.ModelError
