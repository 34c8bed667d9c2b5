"""ACL-filtered search against a brute-force oracle in Python: random ACLs, random
principals, revocations and deletions; never a hidden document, always min(k, visible)."""

import numpy as np

from conftest import unit_vectors

PRINCIPALS = ["alice", "bob", "carol", "dave", "eng", "ops"]


def random_acl(rng):
    size = int(rng.integers(0, 3))  # 0: public
    return sorted(rng.choice(PRINCIPALS, size=size, replace=False).tolist())


def oracle(docs, principals, query, k):
    """The true top-k visible doc ids: public or shared with any principal, by cosine."""
    visible = [d for d, (acl, _) in docs.items() if not acl or set(acl) & set(principals)]
    visible.sort(key=lambda d: -float(docs[d][1] @ query))
    return visible[:k]


def check_queries(store, docs, rng, queries=40):
    for _ in range(queries):
        principals = rng.choice(PRINCIPALS, size=int(rng.integers(0, 3)), replace=False).tolist()
        k = int(rng.integers(1, 15))
        query = unit_vectors(rng, 1)[0]
        result = store.search(query, k=k, principals=principals, dedup=None)
        expected = oracle(docs, principals, query, k)
        assert [h.doc_id for h in result] == expected, (principals, k)
        for hit in result:
            assert abs(hit.score - float(docs[hit.doc_id][1] @ query)) < 1e-4


def test_acl_search_matches_the_oracle(store):
    rng = np.random.default_rng(7)
    docs = {}
    for batch in range(3):
        vectors = unit_vectors(rng, 40)
        with store.batch() as b:
            for i in range(40):
                doc_id = f"d{batch}-{i}"
                acl = random_acl(rng)
                # One short text is one child chunk: one vector row.
                b.upsert(doc_id, f"document {doc_id}", acl=acl, vectors=vectors[i : i + 1])
                docs[doc_id] = (acl, vectors[i])
    check_queries(store, docs, rng)

    # Revocations and deletions take effect at once.
    with store.batch() as b:
        for doc_id in rng.choice(sorted(docs), size=30, replace=False):
            if rng.random() < 0.5:
                b.delete(doc_id)
                del docs[doc_id]
            else:
                acl = random_acl(rng)
                b.set_acl(doc_id, acl)
                docs[doc_id] = (acl, docs[doc_id][1])
    check_queries(store, docs, rng)


def test_a_replace_without_an_acl_never_widens_who_may_see(store):
    store.upsert("refunds", "Refunds take five days.", acl=["billing"])
    store.upsert("refunds", "Refunds take three days.")  # no ACL given: the stored one stays
    assert store.document("refunds")["acl"] == ["billing"]
    assert [h.doc_id for h in store.search("refunds", k=3)] == []
    assert [h.doc_id for h in store.search("refunds", k=3, principals=["billing"])] == ["refunds"]
    store.upsert("refunds", "Refunds take three days.", acl=[])  # public, as asked
    assert [h.doc_id for h in store.search("refunds", k=3)] == ["refunds"]
    store.upsert("new", "A new note.")
    assert store.document("new")["acl"] == []
