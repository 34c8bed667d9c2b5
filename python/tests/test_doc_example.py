"""The Python example of docs/python.md runs as printed (so it cannot rot)."""

import contextlib
import io
import pathlib
import re

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"


def test_doc_example(tmp_path, monkeypatch):
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {})
    lines = out.getvalue().splitlines()
    assert "runbook" in lines[0] and "['Deploys', 'Rollback']" in lines[0]
    assert lines[-1] == "answered by default@1"
    assert (tmp_path / "kb.folio").exists()
    # Run again: the documents are unchanged, so no new version answers.
    again = io.StringIO()
    with contextlib.redirect_stdout(again):
        exec(compile(code, str(DOC), "exec"), {})
    assert again.getvalue().splitlines()[-1] == "answered by default@1"
