import types

import taskgate


def test_all_matches_exported_names() -> None:
    modules = {n for n, v in vars(taskgate).items() if isinstance(v, types.ModuleType)}
    public = {n for n in vars(taskgate) if not n.startswith("_")} - modules
    assert set(taskgate.__all__) == public | {"__version__"}
    for name in taskgate.__all__:
        assert hasattr(taskgate, name), name


def test_every_exported_exception_has_one_root() -> None:
    exported = [
        v for v in map(vars(taskgate).get, taskgate.__all__)
        if isinstance(v, type) and issubclass(v, BaseException)
    ]  # fmt: skip
    assert len(exported) >= 14
    for exc in exported:
        assert issubclass(exc, taskgate.TaskgateError), exc
        assert issubclass(exc, ValueError) or exc in (
            taskgate.TaskgateError,
            taskgate.ModelError,
            taskgate.MissingExtraError,
            taskgate.ToolRefused,
        ), exc
