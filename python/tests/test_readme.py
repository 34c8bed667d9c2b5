"""The README's Python example runs as printed (so it cannot rot)."""

import contextlib
import io
import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_readme_example(tmp_path, monkeypatch):
    section = README.read_text().split("\n## Python\n", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {})
    lines = out.getvalue().splitlines()
    assert "runbook" in lines[0] and "['Deploys', 'Rollback']" in lines[0]
    assert lines[-1] == "answered by default@1"
    assert (tmp_path / "kb.folio").exists()
