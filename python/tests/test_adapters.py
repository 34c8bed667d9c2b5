"""The LangChain and LlamaIndex adapters: add texts, search as two principals, delete."""

import pytest

TEXTS = {
    "deploy": ("# Deploys\n\n## Rollback\n\nRun the rollback command to restore the build.", ["eng"]),
    "salary": ("# Pay\n\nSalary bands and the rollback of last year's raise.", ["hr"]),
    "lunch": ("The canteen serves lunch from noon.", []),
}


def test_langchain_flow_with_folio_chunking(store):
    from folio.langchain import FolioVectorStore

    vs = FolioVectorStore(store, principals=["eng"], chunking=True, folio_fields=True)
    ids = vs.add_texts(
        [t for t, _ in TEXTS.values()],
        metadatas=[{"name": n} for n in TEXTS],
        ids=list(TEXTS),
        acls=[acl for _, acl in TEXTS.values()],
        format="markdown",
    )
    assert ids == list(TEXTS)
    eng = vs.similarity_search("rollback", k=3)
    assert {d.id for d in eng} == {"deploy", "lunch"}
    assert eng[0].id == "deploy" and eng[0].metadata["section_path"] == ["Deploys", "Rollback"]
    assert eng[0].metadata["name"] == "deploy"
    hr = vs.similarity_search_with_score("rollback", k=3, principals=["hr"])
    assert {d.id for d, _ in hr} == {"salary", "lunch"} and hr[0][1] >= hr[-1][1]
    assert vs.delete(["deploy"])
    assert [d.id for d in vs.similarity_search("rollback", k=3)] == ["lunch"]
    assert [d.id for d in vs.get_by_ids(["salary", "deploy"])] == ["salary"]


def test_llama_index_flow_with_folio_chunking(store):

    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
    from llama_index.core.vector_stores.types import VectorStoreQuery

    from folio.llama_index import FolioVectorStore

    vs = FolioVectorStore(store, principals=["eng"], chunking=True)
    nodes = [
        TextNode(
            id_=name,
            text=text,
            metadata={"acl": acl},
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"src-{name}")},
        )
        for name, (text, acl) in TEXTS.items()
    ]
    assert vs.add(nodes) == list(TEXTS)
    eng = vs.query(VectorStoreQuery(query_str="rollback", similarity_top_k=3))
    assert set(eng.ids) == {"deploy", "lunch"} and eng.ids[0] == "deploy"
    assert eng.nodes[0].get_content().startswith("# Deploys")
    hr = vs.query(VectorStoreQuery(query_str="rollback", similarity_top_k=3), principals=["hr"])
    assert set(hr.ids) == {"salary", "lunch"}
    vs.delete("src-deploy")
    assert vs.query(VectorStoreQuery(query_str="rollback", similarity_top_k=3)).ids == ["lunch"]
