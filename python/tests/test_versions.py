"""Versions, tags, aliases, routing, rollback and pinning; a revocation reaches every version."""

import pytest

import folio


def test_versions_tags_aliases_and_rollback(store):
    store.upsert("doc", "the old answer is blue")
    store.tag("default", 1, "v-blue")
    receipt = store.upsert("doc", "the new answer is green")
    # The merge policy may add a version right after the commit (the old row is dead).
    head = receipt["merged"].get("default", receipt["versions"]["default"])
    assert store.search("answer")[0].text == "the new answer is green"

    old = store.search("answer", target="default@1")
    assert (old.version, old[0].text) == (1, "the old answer is blue")
    assert store.search("answer", target="default@v-blue")[0].version == 1

    store.set_alias("prod", "default@2")
    assert store.search("answer", target="prod").version == 2
    rolled = store.rollback("prod", 1)
    assert rolled == {"target": "prod", "index": "default", "version": 1, "alias": True}
    assert store.search("answer", target="prod")[0].text == "the old answer is blue"

    # Pinning the bare index name, then serving the head again.
    store.rollback("default", 1)
    assert store.search("answer").version == 1
    assert store.unpin("default") == 1
    assert store.search("answer").version == head

    versions = store.versions()
    assert [v["version"] for v in versions][:2] == [0, 1]
    assert versions[1]["tags"] == ["v-blue"] and versions[1]["aliases"] == ["prod"]
    assert versions[-1]["version"] == head and versions[-1]["head"] and versions[-1]["serving"]
    assert store.remove_tag("default", "v-blue") == 1
    assert store.check()["consistent"]


def test_split_alias_routes_by_key(store):
    store.upsert("a", "first")
    store.upsert("a", "second")
    store.set_alias("canary", [("default", 1, 50), ("default", 2, 50)])
    for key in ["alice", "bob", "carol", "dave"]:
        route = store.route("canary", key)
        result = store.search("first second", target="canary", route_key=key)
        assert result.version == route["version"]
    (alias,) = store.aliases()
    assert alias["name"] == "canary" and sum(r["weight"] for r in alias["routes"]) == 100
    store.rollback("canary", 1)
    assert all(store.route("canary", key)["version"] == 1 for key in ["alice", "bob"])
    store.remove_alias("canary")
    assert store.aliases() == []


def test_revocation_reaches_old_versions(store):
    store.upsert("doc", "quarterly numbers", acl=["finance"])
    store.upsert("other", "unrelated public text")
    assert store.search("quarterly", target="default@1", principals=["finance"])[0].doc_id == "doc"
    store.set_acl("doc", ["board"])
    for target in ["default@1", "default@2", "default"]:
        hits = store.search("quarterly", target=target, principals=["finance"])
        assert "doc" not in [h.doc_id for h in hits]


def test_second_index(store):
    store.upsert("a", "alpha text")
    version = store.create_index("kb")
    assert store.index_names() == ["default", "kb"]
    result = store.search("alpha", target=f"kb@{version}")
    assert (result.index, result.version, result[0].doc_id) == ("kb", version, "a")
    store.drop_index("kb")
    assert store.index_names() == ["default"]
