#!/usr/bin/env python3
"""Screenshots of every `folio ui` page, into docs/ui/ (or the folder given): the browser
tests' store, eval run, server and browser (ui/tests/browser/ui_session.py), so the pictures
show what the tests check. Run with the browser tests' environment:

    scripts/ci/test_ui.sh --prepare
    target/ui/venv/bin/python scripts/ui/screenshots.py [OUT]
"""

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "ui" / "tests" / "browser"))

import ui_session as ui  # noqa: E402


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "ui"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        store = ui.make_store(folder)
        eval_file, plot = ui.make_eval(folder)
        replay = ui.make_replay(folder, store)
        server = ui.Server(store, "--eval", eval_file, "--eval", replay, "--plot", plot)
        driver = ui.browser(1280, 900)
        try:
            for name, path in ui.page_paths(eval_file, replay).items():
                ui.open_page(driver, server, path)
                height = driver.execute_script("return document.body.scrollHeight")
                driver.set_window_size(1280, min(max(height + 40, 600), 2400))
                target = out / f"{name}.png"
                driver.save_screenshot(str(target))
                print(target)
        finally:
            driver.quit()
            server.close()


if __name__ == "__main__":
    main()
