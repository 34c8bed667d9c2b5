"""PDF files from Python: bytes read with format="pdf", and the pages each hit lies on."""

import pytest

import folio

SYLLABLES = ["ka", "lo", "mi", "nu", "pe", "ri", "so", "tu"]


def word(page, n):
    """A word found on page `page` only: its first letter names the page (a, b, c)."""
    return "abc"[page] + "".join(SYLLABLES[(n >> s) % 8] for s in (0, 3, 6))


# Three pages of three paragraphs of three lines; a page (~450 characters) is longer than a
# child (300) and two paragraphs fit in one, three do not.
PAGES = [
    [[" ".join(word(p, 18 * par + 6 * line + w) for w in range(6)) for line in range(3)] for par in range(3)]
    for p in range(3)
]


def build_pdf(pages):
    """A PDF of `pages` (paragraphs of lines) in 12-point Helvetica, objects and xref by hand."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, paragraphs in enumerate(pages):
        ops, y = ["BT /F1 12 Tf"], 720
        for lines in paragraphs:
            for line in lines:
                ops.append(f"1 0 0 1 72 {y} Tm ({line}) Tj")
                y -= 15
            y -= 20  # paragraphs apart
        ops.append("ET")
        stream = " ".join(ops).encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out, offsets = b"%PDF-1.4\n", []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


def page_of(w):
    return "abc".index(w[0]) + 1


def test_pdf_bytes_are_read_and_hits_carry_their_pages(store):
    store.upsert("paper", build_pdf(PAGES), format="pdf")
    doc = store.document("paper")
    assert doc["format"] == "pdf"
    # The stored text is the text layer: every word, a form feed before each later page.
    assert doc["text"].count("\f") == 2
    for p, paragraphs in enumerate(PAGES, 1):
        page_text = doc["text"].split("\f")[p - 1]
        for word in " ".join(" ".join(lines) for lines in paragraphs).split():
            assert word in page_text
    seen = set()
    middle = {p: PAGES[p - 1][1][1] for p in (1, 2, 3)}
    for query in middle.values():
        result = store.search(query, k=10, expand=0)
        assert result.hits
        for hit in result:
            words = [w for w in hit.text.split() if w.isalpha()]
            on = [page_of(w) for w in words]
            assert hit.pages == (min(on), max(on)), (hit.text, hit.pages)
            seen.add(hit.pages)
    # A page's middle paragraph comes back on that page alone; some child spans a break.
    for p, query in middle.items():
        top = store.search(query, k=1, expand=0)[0]
        assert query in " ".join(top.text.split()) and top.pages == (p, p)
    assert any(first < last for first, last in seen) or len(seen) == 3
    # A document of another format has no pages.
    store.upsert("note", "plain words here")
    (hit,) = [h for h in store.search("plain words here", k=5) if h.doc_id == "note"]
    assert hit.pages is None


def test_pdf_bytes_in_a_batch_and_plan(store):
    pdf = build_pdf(PAGES[:1])
    planned = store.plan("p", pdf, format="pdf")
    assert word(0, 0) in planned[0]["embed_text"]
    with store.batch() as b:
        b.upsert("p", pdf, format="pdf", acl=["team"])
    (hit,) = store.search(PAGES[0][2][0], k=1, principals=["team"])
    assert hit.pages == (1, 1) and hit.doc_id == "p"


def test_bytes_and_refusals(store):
    # UTF-8 bytes of a text format are its text.
    store.upsert("md", "# Title\n\nSome body.".encode(), format="markdown")
    assert store.document("md")["text"] == "# Title\n\nSome body."
    with pytest.raises(folio.InvalidArgument, match="pdf"):
        store.upsert("bad", b"%PDF-1.4\nnot really a pdf", format="pdf")
    with pytest.raises(folio.InvalidArgument, match="UTF-8"):
        store.upsert("bin", b"\xff\xfe\x00binary", format="text")
    with pytest.raises(folio.InvalidArgument, match="str or bytes"):
        store.upsert("num", 42)
    with pytest.raises(folio.InvalidArgument):
        with store.batch() as b:
            b.upsert("bad", b"\x00\x01", format="pdf")
    assert sorted(store.document_ids()) == ["md"]
