"""`folio ui` in a real headless browser (Debian's chromium and chromedriver): every page
opens, searches hold only what the principal may see (page source included), the drawn
chunks are `folio chunks --json`'s, a split gold span is marked, the token and the host are
checked, and bad input gets an error page from a server that goes on."""

import html
import json
import re
import shutil
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

import ui_session as ui


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui")
    store = ui.make_store(folder)
    eval_file, plot = ui.make_eval(folder)
    replay = ui.make_replay(folder, store)
    server = ui.Server(store, "--eval", eval_file, "--eval", replay, "--plot", plot)
    driver = ui.browser()
    yield {"folder": folder, "store": store, "eval": eval_file, "replay": replay, "server": server,
           "driver": driver}
    driver.quit()
    server.close()


def chunks(store, doc_id):
    return json.loads(ui.folio("chunks", store, doc_id, "--json"))


def text_of(element):
    return element.get_attribute("textContent")


def test_every_page_opens(world):
    driver, server = world["driver"], world["server"]
    for name, path in ui.page_paths(world["eval"], world["replay"]).items():
        ui.open_page(driver, server, path)
        assert driver.find_elements(By.CSS_SELECTOR, "main h1"), name
        assert not driver.find_elements(By.CSS_SELECTOR, ".error"), (name, driver.page_source[:2000])
        assert "folio ui" in driver.title, name
    ui.open_page(driver, server, "/documents")
    listed = {e.get_attribute("data-doc-id") for e in driver.find_elements(By.CSS_SELECTOR, "tr.document")}
    assert listed == set(ui.PUBLIC + ui.ENGINEERING + ui.FINANCE)
    ui.open_page(driver, server, "/documents?principal=engineering")
    listed = {e.get_attribute("data-doc-id") for e in driver.find_elements(By.CSS_SELECTOR, "tr.document")}
    assert listed == set(ui.PUBLIC + ui.ENGINEERING)


def test_a_search_shows_only_what_the_principal_may_see(world):
    driver, server, store = world["driver"], world["server"], world["store"]
    query = "/search?q=what+is+the+hotel+limit+per+night&k=10&as="
    ui.open_page(driver, server, query + "finance")
    found = [e.get_attribute("data-doc-id") for e in driver.find_elements(By.CSS_SELECTOR, "li.hit")]
    assert "expense-policy.md" in found
    assert driver.find_elements(By.CSS_SELECTOR, "li.hit mark"), "the matching child is highlighted"
    ui.open_page(driver, server, query + "engineering")
    source = driver.page_source
    found = [e.get_attribute("data-doc-id") for e in driver.find_elements(By.CSS_SELECTOR, "li.hit")]
    assert found, "engineering gets an answer"
    secret_texts = [c["text"] for doc in ui.FINANCE for c in chunks(store, doc)]
    for name in ui.FINANCE:
        assert name not in source
    for text in secret_texts:
        assert text.strip()[:40] not in source
    # The hidden count is the finance documents' children, and only a count.
    hidden = int(driver.find_element(By.ID, "hidden").get_attribute("data-hidden"))
    assert hidden == len(secret_texts)


def test_drawn_chunks_are_folio_chunks(world):
    driver, server, store = world["driver"], world["server"], world["store"]
    expected = chunks(store, "deploy-runbook.md")
    ui.open_page(driver, server, "/document?id=deploy-runbook.md")
    rows = [(e.get_attribute("data-chunk-id"), int(e.get_attribute("data-start")), int(e.get_attribute("data-end")))
            for e in driver.find_elements(By.CSS_SELECTOR, "tr.chunk")]
    assert rows == [(c["chunk_id"], c["start"], c["end"]) for c in expected]
    drawn = driver.find_elements(By.CSS_SELECTOR, "#drawn span.child")
    assert [(e.get_attribute("data-chunk-id"), text_of(e)) for e in drawn] == \
        [(c["chunk_id"], c["text"]) for c in expected]
    # The drawing is the whole text, once, with each parent's heading line added.
    whole = text_of(driver.find_element(By.ID, "drawn"))
    for head in driver.find_elements(By.CSS_SELECTOR, "#drawn .parent-head"):
        whole = whole.replace(text_of(head), "", 1)
    assert whole == (Path(world["folder"]) / "deploy-runbook.md").read_text()


def words(text):
    return html.unescape(re.sub(r"<[^>]+>", " ", text)).split()


def test_html_is_drawn_and_answered_as_a_reader_sees_it(world):
    driver, server, store = world["driver"], world["server"], world["store"]
    expected = chunks(store, "release-notes.html")
    ui.open_page(driver, server, "/document?id=release-notes.html")
    drawn = driver.find_elements(By.CSS_SELECTOR, "#drawn span.child")
    assert [(e.get_attribute("data-chunk-id"), int(e.get_attribute("data-start")), int(e.get_attribute("data-end")))
            for e in drawn] == [(c["chunk_id"], c["start"], c["end"]) for c in expected]
    for element, chunk in zip(drawn, expected):
        seen = text_of(element)
        assert "<" not in seen and "&amp;" not in seen, seen
        assert seen.split() and set(seen.split()) <= set(words(chunk["text"])), (seen, chunk["text"])
    whole = text_of(driver.find_element(By.ID, "drawn"))
    assert "files & keeps the column order" in whole and "<strong>" not in driver.find_element(By.ID, "drawn").get_attribute("innerHTML")
    ui.open_page(driver, server, "/search?q=ledger+export+column+order")
    hit = driver.find_element(By.CSS_SELECTOR, "li.hit[data-doc-id='release-notes.html'] pre")
    assert "files & keeps the column order" in text_of(hit)
    assert "<p>" not in text_of(hit) and hit.find_elements(By.TAG_NAME, "mark")


def test_children_split_or_truncated_for_the_model_are_marked(tmp_path):
    store, embedder = ui.make_model_store(tmp_path)
    server = ui.Server(store, "--embedder", embedder)
    driver = ui.browser()
    try:
        ui.open_page(driver, server, "/document?id=long.md")
        states = [e.get_attribute("data-model") for e in driver.find_elements(By.CSS_SELECTOR, "tr.chunk")]
        pieces = states.count("a piece of a child split for the model")
        assert pieces >= 2 and len(driver.find_elements(By.CSS_SELECTOR, "#drawn .child.piece")) == pieces
        assert all(s in ("a piece of a child split for the model", "read whole") for s in states), states
        ui.open_page(driver, server, "/document?id=truncated.md")
        states = [e.get_attribute("data-model") for e in driver.find_elements(By.CSS_SELECTOR, "tr.chunk")]
        assert states.count("truncated: the model reads its first 256 tokens") == 1, states
        assert len(driver.find_elements(By.CSS_SELECTOR, "#drawn .child.truncated")) == 1
        assert "(model)" in driver.find_element(By.ID, "chunks").text
    finally:
        driver.quit()
        server.close()


def test_a_split_gold_span_is_marked(world):
    driver, server = world["driver"], world["server"]
    ui.open_page(driver, server, ui.page_paths(world["eval"])["eval"])
    assert driver.find_elements(By.CSS_SELECTOR, "img.chart"), "the harness's chart is in the page"
    split = driver.find_elements(By.CSS_SELECTOR, "tr.question[data-split='true'][data-strategy='fixed:200']")
    assert split
    split[0].find_element(By.TAG_NAME, "a").click()
    gold = driver.find_element(By.CSS_SELECTOR, ".gold-span")
    assert gold.get_attribute("data-split") == "true"
    assert "split by a child chunk boundary" in gold.text
    assert driver.find_elements(By.CSS_SELECTOR, "pre.excerpt .boundary"), "the boundary is drawn"
    assert driver.find_elements(By.CSS_SELECTOR, "pre.excerpt .gold")


def test_a_replay_shows_each_question_with_its_label(world):
    driver, server = world["driver"], world["server"]
    ui.open_page(driver, server, ui.page_paths(world["eval"], world["replay"])["eval-replay"])
    row = driver.find_element(By.CSS_SELECTOR, "tr.replayed[data-query-id='q-hotel']")
    outcomes = {e.get_attribute("data-target"): e.text for e in row.find_elements(By.CSS_SELECTOR, ".outcome")}
    assert "miss" in outcomes["default@2"] and "hit at rank 1" in outcomes["default@3"], outcomes
    assert row.find_element(By.CSS_SELECTOR, "td.labels").text == "ranking"


def test_the_token_and_the_host_are_checked(world):
    server = world["server"]
    assert server.get("/documents", token=False)[0] == 401
    status, body = server.get("/documents?token=" + "0" * 64, token=False)
    assert status == 401 and "access token" in body
    assert server.get("/documents", host="evil.example:80")[0] == 421
    assert server.get("/documents", host=f"attacker.test:{server.port}")[0] == 421
    assert server.get("/documents")[0] == 200
    assert server.get("/documents", host=f"localhost:{server.port}")[0] == 200
    fresh = ui.browser()
    try:
        fresh.get(server.base + "/search?q=hotel&as=finance")
        assert "access token" in fresh.page_source
        assert "expense-policy" not in fresh.page_source
    finally:
        fresh.quit()


def test_bad_input_gets_a_page_and_the_server_goes_on(world, tmp_path):
    server = world["server"]
    for path, status, words in [
        ("/search?q=hotel&filter=updated_at+%3E%3D", 400, "filter"),
        ("/search?q=hotel&k=many", 400, "whole number"),
        ("/search?q=hotel&target=default@99", 400, "99"),
        ("/document?id=handbook.md&target=default@99", 404, "99"),
        ("/document?id=no-such-doc", 404, "no-such-doc"),
        ("/versions/diff?index=default&from=1&to=x", 400, "version number"),
        ("/eval?file=/no/such/file.jsonl", 404, "no/such/file"),
        ("/log/replay?base=default@1&other=default", 400, "select at least one"),
    ]:
        got, body = server.get(path)
        assert got == status, (path, got, body[:500])
        assert "class=\"error\"" in body and words in body, (path, body[:800])
    assert server.running()
    # A missing store and a damaged one: pages that say so, from a server that goes on.
    missing = ui.Server(tmp_path / "missing.folio")
    damaged_path = tmp_path / "damaged.folio"
    shutil.copy(world["store"], damaged_path)
    data = bytearray(damaged_path.read_bytes())
    for at in range(0, len(data), 4096):
        data[at + 100:at + 164] = bytes(64)
    damaged_path.write_bytes(bytes(data))
    damaged = ui.Server(damaged_path)
    try:
        status, body = missing.get("/documents")
        assert status == 503 and "could not be opened" in body
        status, body = damaged.get("/documents")
        assert status in (500, 503) and "class=\"error\"" in body, body[:500]
        assert missing.running() and damaged.running()
        assert missing.get("/versions")[0] == 503
    finally:
        missing.close()
        damaged.close()


def test_versions_show_tags_aliases_and_changes(world):
    driver, server = world["driver"], world["server"]
    ui.open_page(driver, server, "/versions")
    alias = driver.find_element(By.CSS_SELECTOR, "tr.alias[data-alias='canary']").text
    assert "default@2: 80%" in alias and "default@3: 20%" in alias
    row = driver.find_element(By.CSS_SELECTOR, "tr.version[data-version='2']").text
    assert "before-finance" in row
    ui.open_page(driver, server, "/versions/diff?index=default&from=2&to=3")
    added = {e.text for e in driver.find_elements(By.CSS_SELECTOR, "ul[data-change='added'] li")}
    assert added == set(ui.FINANCE)
    assert not driver.find_elements(By.CSS_SELECTOR, "ul[data-change='deleted'] li")


def test_failures_in_the_log_go_to_replay(world):
    driver, server = world["driver"], world["server"]
    ui.open_page(driver, server, "/log")
    rows = driver.find_elements(By.CSS_SELECTOR, "tr.request")
    assert len(rows) == 3
    failures = [r for r in rows if r.get_attribute("data-failure")]
    assert [r.get_attribute("data-failure") for r in failures] == ["thumb down"]
    assert "default@3" in failures[0].text
    driver.find_element(By.XPATH, "//button[text()='Select failures']").click()
    checked = [r.get_attribute("data-request-id") for r in rows
               if r.find_element(By.TAG_NAME, "input").is_selected()]
    assert checked == [failures[0].get_attribute("data-request-id")]
    driver.find_element(By.NAME, "base").send_keys("default@2")
    driver.find_element(By.NAME, "other").send_keys("default@3")
    driver.find_element(By.XPATH, "//form[@id='replay']//button[text()='Replay']").click()
    assert ui.wait_for(lambda: driver.find_elements(By.ID, "replay-tables"))
    tables = driver.find_element(By.ID, "replay-tables").text
    assert "default@2" in tables and "default@3" in tables
