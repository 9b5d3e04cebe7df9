"""The MiniLM graph rewrite: word vectors looked up in the int8 table before they are made float, with
vectors bit for bit those of the model as shipped."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

from cairn.store import minilm_graph
from cairn.store.embeddings import MiniLMInt8Embedding, _Loaded, default_model_path
from cairn.store.minilm_graph import DEQUANTIZED, QUANTIZED, gather_before_dequantize

TEXTS = [
    "login button component",
    "",
    "Traceback (most recent call last): File 'cairn/store/vectors.py', line 306 " * 30,
    "Der Test schlägt fehl, wenn zwei Prozesse gleichzeitig schreiben — 並行書き込み",
]


def _nodes(model: bytes) -> list[tuple[list[str], list[str]]]:
    (graph,) = [payload for number, _, payload in minilm_graph._fields(memoryview(model)) if number == 7]
    assert graph is not None
    return [minilm_graph._io(node) for number, _, node in minilm_graph._fields(graph) if number == 1 and node]


def _session(model: bytes) -> onnxruntime.InferenceSession:
    return onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def shipped() -> bytes:
    return default_model_path().read_bytes()


def test_the_vectors_are_those_of_the_model_as_shipped(shipped: bytes) -> None:
    rewritten = gather_before_dequantize(shipped)
    ef = MiniLMInt8Embedding()
    ef.load()
    assert ef._loaded is not None
    tokenizer = ef._loaded.tokenizer
    as_shipped = MiniLMInt8Embedding()
    as_shipped._loaded = _Loaded(tokenizer, _session(shipped))
    reordered = MiniLMInt8Embedding()
    reordered._loaded = _Loaded(tokenizer, _session(rewritten))
    expected = as_shipped.embed(TEXTS)
    np.testing.assert_array_equal(reordered.embed(TEXTS), expected)
    np.testing.assert_array_equal(ef.embed(TEXTS), expected)  # what cairn loads is the rewrite


def test_the_table_is_looked_up_int8_and_nothing_else_changes(shipped: bytes) -> None:
    before, after = _nodes(shipped), _nodes(gather_before_dequantize(shipped))
    assert [DEQUANTIZED] in [outputs for _, outputs in before]
    assert [DEQUANTIZED] not in [outputs for _, outputs in after]  # no float table to fold
    assert ([QUANTIZED, "input_ids"], [minilm_graph.TABLE + "rows_q"]) in after
    assert len(after) == len(before) + 1  # Cast, Mul, Gather -> Gather, Gather, Cast, Mul
    untouched = [node for node in before if minilm_graph.TABLE not in " ".join(node[0] + node[1])]
    assert [node for node in after if minilm_graph.TABLE not in " ".join(node[0] + node[1])] == untouched


def test_a_graph_not_as_expected_is_left_as_it_is() -> None:
    for model in (b"", b"\x08\x07", b"\x08\x07:\x00"):  # empty; ir_version only; an empty graph
        assert gather_before_dequantize(model) is model
