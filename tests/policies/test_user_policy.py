"""A policy of your own that fails is one line naming its file and line."""

from __future__ import annotations

import pytest

from hpcpower import make_policy
from hpcpower.errors import InputError
from hpcpower.policies.registry import user_code_error


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("x = 1\ndef make(:\n    pass\n", r"syntax.py:2: SyntaxError: "),
        ("x = 1\ny = x / 0\n", r"syntax.py:2: ZeroDivisionError: division by zero$"),
    ],
)
def test_code_that_fails_to_load_names_its_own_file_and_line(tmp_path, text, needle):
    (tmp_path / "syntax.py").write_text(text)
    with pytest.raises(InputError, match=rf"^policy '.*syntax.py:make': .*{needle}") as info:
        make_policy(f"{tmp_path / 'syntax.py'}:make")
    assert "<frozen" not in str(info.value) and "\n" not in str(info.value)


def test_an_error_in_a_running_policy_names_the_user_line_and_the_time(tmp_path):
    (tmp_path / "mine.py").write_text("def decide(view):\n    return 1 / 0\n")
    spec = f"{tmp_path / 'mine.py'}:decide"
    namespace: dict = {}
    exec(compile((tmp_path / "mine.py").read_text(), str(tmp_path / "mine.py"), "exec"), namespace)
    try:
        namespace["decide"](None)
    except ZeroDivisionError as exc:
        error = user_code_error(exc, spec, " at t=30 s")
    where = f"{tmp_path / 'mine.py'}:2"
    assert str(error) == f"policy {spec!r}: {where}: ZeroDivisionError: division by zero at t=30 s"
