"""Each adapter scores what the model computes: checked against the libraries' own calls, one pair at a time."""

from __future__ import annotations

import numpy as np
import pytest

from gradebench.errors import GradebenchError, InvalidArgumentError, RecipeError
from gradebench.scorers.adapters import make_model_scorer
from tests.conftest import one_torch_thread

TOL = 1e-5


def _pairs(lists):
    return lists.pairs()


def _hf_logits(path, queries, candidates, *, pair: bool = True):
    """Logits of an AutoModelForSequenceClassification, one unpadded item at a time."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForSequenceClassification.from_pretrained(str(path)).eval()
    out = []
    with torch.inference_mode():
        for q, c in zip(queries, candidates):
            enc = tok(q, c, return_tensors="pt", truncation=True) if pair else tok(q, return_tensors="pt",
                                                                                     add_special_tokens=False)
            out.append(model(**enc).logits[0].float().numpy())
    return np.array(out, dtype=np.float64)


def test_sequence_classifier_is_the_models_logit(seq_classifier, test_lists):
    q, c = _pairs(test_lists)
    with one_torch_thread():
        scorer = make_model_scorer(seq_classifier, "sequence-classifier", {"batch_size": 4})
        got = scorer.score(test_lists)[test_lists.mask]
        want = _hf_logits(seq_classifier, q, c)[:, 0]
    assert np.abs(got - want).max() < TOL
    assert np.std(got) > 1e-3  # the head is not constant, so the comparison means something
    assert scorer.options()["output"] == "logit"


def test_nli_classifier_scores_the_entailment_probability(nli_classifier, test_lists):
    q, c = _pairs(test_lists)
    with one_torch_thread():
        logits = _hf_logits(nli_classifier, q, c)
        probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        default = make_model_scorer(nli_classifier)
        assert default.options()["label"] == "entailment"
        assert np.abs(default.score(test_lists)[test_lists.mask] - probs[:, 1]).max() < TOL
        neutral = make_model_scorer(nli_classifier, options={"label": "Neutral"})
        assert np.abs(neutral.score(test_lists)[test_lists.mask] - probs[:, 2]).max() < TOL
        by_index = make_model_scorer(nli_classifier, options={"label": 0})
        assert by_index.options()["label"] == "contradiction"
        swapped = make_model_scorer(nli_classifier, options={"pair_order": "candidate-query"})
        want = _hf_logits(nli_classifier, c, q)
        want = np.exp(want) / np.exp(want).sum(axis=1, keepdims=True)
        assert np.abs(swapped.score(test_lists)[test_lists.mask] - want[:, 1]).max() < TOL
    with pytest.raises(InvalidArgumentError, match=r"no class 'maybe' \(its classes: 0=contradiction, 1=entailment"):
        make_model_scorer(nli_classifier, options={"label": "maybe"}).options()


def test_a_multi_class_head_without_entailment_asks_for_a_label(tiny_bert, tmp_path):
    from tests.adapters.conftest import save_classifier

    path = save_classifier(tiny_bert, tmp_path / "sentiment", num_labels=2, seed=5, id2label={0: "neg", 1: "pos"})
    with pytest.raises(InvalidArgumentError, match=r"2 classes \(0=neg, 1=pos\); which one scores\?") as err:
        make_model_scorer(path).options()
    assert err.value.key == "label"


def test_a_default_two_class_head_is_read_as_transformers_reads_it(tiny_bert, tmp_path, test_lists):
    """transformers saves no id2label/num_labels for its default two classes: still two, LABEL_0 and LABEL_1."""
    import json

    from tests.adapters.conftest import save_classifier

    path = save_classifier(tiny_bert, tmp_path / "two-class", num_labels=2, seed=6)
    doc = json.loads((path / "config.json").read_text())
    assert "id2label" not in doc and "num_labels" not in doc  # what this test is about
    with pytest.raises(InvalidArgumentError, match=r"2 classes \(0=LABEL_0, 1=LABEL_1\); which one scores\?"):
        make_model_scorer(path).options()
    q, c = _pairs(test_lists)
    want = _hf_logits(path, q, c)
    want = np.exp(want) / np.exp(want).sum(axis=1, keepdims=True)
    with one_torch_thread():
        for label in ("LABEL_1", 0):
            scorer = make_model_scorer(path, options={"label": label})
            head = scorer.options()
            assert head["output"] == "probability" and head["num_labels"] == 2
            assert np.abs(scorer.score(test_lists)[test_lists.mask] - want[:, head["label_index"]]).max() < TOL


def test_a_classifier_without_its_head_in_the_weights_is_refused(tiny_bert, tmp_path, test_lists):
    """config.json claims a classification head the weights lack: loading would draw a random one."""
    import json
    import shutil

    copy = shutil.copytree(tiny_bert, tmp_path / "claims-a-head")
    doc = json.loads((copy / "config.json").read_text())
    doc["architectures"] = ["BertForSequenceClassification"]
    doc["id2label"] = {"0": "LABEL_0"}  # one output (without it transformers reads two classes and asks which)
    (copy / "config.json").write_text(json.dumps(doc))
    with pytest.raises(InvalidArgumentError, match="no trained sequence-classification head"):
        make_model_scorer(copy, "sequence-classifier").score(test_lists)


@pytest.mark.reference
def test_cross_encoder_matches_cross_encoder_predict(st_cross_encoder, test_lists):
    import torch
    from sentence_transformers import CrossEncoder

    q, c = _pairs(test_lists)
    with one_torch_thread():
        ce = CrossEncoder(str(st_cross_encoder), device="cpu")
        raw = ce.predict(list(zip(q, c)), activation_fn=torch.nn.Identity(), batch_size=1)
        activated = ce.predict(list(zip(q, c)), batch_size=1)  # the folder's sigmoid
        scorer = make_model_scorer(st_cross_encoder)
        assert scorer.adapter == "cross-encoder" and scorer.options()["activation"] == "raw"
        assert np.abs(scorer.score(test_lists)[test_lists.mask] - raw).max() < TOL
        model = make_model_scorer(st_cross_encoder, options={"activation": "model"})
        assert np.abs(model.score(test_lists)[test_lists.mask] - activated).max() < TOL


def test_chat_reward_reads_the_conversation_through_the_chat_template(chat_reward, test_lists):
    from transformers import AutoTokenizer

    q, c = _pairs(test_lists)
    tok = AutoTokenizer.from_pretrained(str(chat_reward))
    texts = [tok.apply_chat_template([{"role": "user", "content": a}, {"role": "assistant", "content": b}],
                                     tokenize=False) for a, b in zip(q, c)]
    assert texts[0].startswith("<|user|> " + q[0])
    with one_torch_thread():
        want = _hf_logits(chat_reward, texts, [None] * len(texts), pair=False)[:, 0]
        scorer = make_model_scorer(chat_reward, options={"batch_size": 3})
        assert scorer.adapter == "chat-reward"
        got = scorer.score(test_lists)[test_lists.mask]
    assert np.abs(got - want).max() < TOL and np.std(got) > 1e-3
    assert len(scorer.options()["chat_template_sha256"]) == 64


def test_chat_reward_without_a_chat_template_is_refused(reward_no_template):
    with pytest.raises(InvalidArgumentError, match="has no chat template") as err:
        make_model_scorer(reward_no_template, "chat-reward").options()
    assert "--adapter sequence-classifier" in err.value.one_line()


@pytest.mark.reference
def test_bi_encoder_matches_sentence_transformer_encode_cosine(minilm, test_lists):
    from sentence_transformers import SentenceTransformer

    q, c = _pairs(test_lists)
    with one_torch_thread():
        st = SentenceTransformer(str(minilm), device="cpu")
        eq = st.encode(q, convert_to_numpy=True).astype(np.float64)
        ec = st.encode(c, convert_to_numpy=True).astype(np.float64)
        want = (eq * ec).sum(1) / np.linalg.norm(eq, axis=1) / np.linalg.norm(ec, axis=1)
        scorer = make_model_scorer(minilm)
        got = scorer.score(test_lists)[test_lists.mask]
    assert scorer.adapter == "bi-encoder" and scorer.options()["max_length"] == 256
    assert np.abs(got - want).max() < TOL


def _judge_reference(path, prompts, answers):
    """Next-token log-probabilities of ``answers`` after each prompt, one unpadded prompt at a time."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForCausalLM.from_pretrained(str(path)).eval()
    ids = [tok.encode(a, add_special_tokens=False)[0] for a in answers]
    out = []
    with torch.inference_mode():
        for p in prompts:
            enc = tok(p, return_tensors="pt", add_special_tokens=False)
            out.append(torch.log_softmax(model(**enc).logits[0, -1].float(), -1)[ids].numpy())
    return np.array(out, dtype=np.float64)


def test_llm_judge_yes_no_log_odds(judge_lm, test_lists):
    from transformers import AutoTokenizer

    q, c = _pairs(test_lists)
    scorer = make_model_scorer(judge_lm, options={"batch_size": 4})
    assert scorer.adapter == "llm-judge" and scorer.options()["chat"] is True
    tok = AutoTokenizer.from_pretrained(str(judge_lm))
    prompts = scorer.prompts(tok, q, c)
    assert prompts[0].endswith("<|assistant|> Answer:") and f"Query: {q[0]}" in prompts[0]
    with one_torch_thread():
        lp = _judge_reference(judge_lm, prompts, [" Yes", " No"])
        got = scorer.score(test_lists)[test_lists.mask]
    assert np.abs(got - (lp[:, 0] - lp[:, 1])).max() < TOL and np.std(got) > 1e-4
    opts = scorer.options()
    assert opts["template"] == "relevance-yes-no" and len(opts["template_sha256"]) == 64


def test_llm_judge_expected_rating(judge_lm, test_lists):
    from transformers import AutoTokenizer

    q, c = _pairs(test_lists)
    scorer = make_model_scorer(judge_lm, options={"template": "quality-1-5"})
    tok = AutoTokenizer.from_pretrained(str(judge_lm))
    with one_torch_thread():
        lp = _judge_reference(judge_lm, scorer.prompts(tok, q, c), [f" {i}" for i in range(1, 6)])
        got = scorer.score(test_lists)[test_lists.mask]
    p = np.exp(lp) / np.exp(lp).sum(axis=1, keepdims=True)
    assert np.abs(got - p @ np.arange(1, 6)).max() < TOL
    assert np.all((got > 1) & (got < 5))


def test_llm_judge_without_chat_uses_the_plain_prompt(judge_lm, tmp_path, test_lists):
    template = tmp_path / "plain.yaml"
    template.write_text("name: plain\nprompt: 'Q: {query} A: {candidate} Good?'\nchat: never\n"
                        "answer_prefix: 'Answer:'\nscore: {kind: yes-no, positive: ' Yes', negative: ' No'}\n")
    scorer = make_model_scorer(judge_lm, options={"template": str(template)})
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(judge_lm))
    assert scorer.prompts(tok, ["q"], ["c"]) == ["Q: q A: c Good?\nAnswer:"]
    assert scorer.options()["chat"] is False and scorer.options()["template_file"] == str(template)


@pytest.mark.parametrize("body, needle, line", [
    ("name: t\nprompt: 'Q: {query}'\nscore: {kind: yes-no, positive: ' Yes', negative: ' No'}\n",
     "prompt is missing the field {candidate}", 2),
    ("name: t\nprompt: '{query} {candidate} {label}'\nscore: {kind: yes-no, positive: ' Yes', negative: ' No'}\n",
     "unknown field(s) {label}", 2),
    ("name: t\nprompt: '{query} {candidate}'\ntemperature: 0\nscore: {kind: yes-no, positive: ' Y', negative: ' N'}\n",
     "unknown key 'temperature'", 3),
    ("name: t\nprompt: '{query} {candidate}'\n", "missing required key 'score'", None),
    ("name: t\nprompt: '{query} {candidate}'\nscore: {kind: rating, labels: {' 1': 1}}\n", "at least 2", None),
])
def test_a_bad_template_is_one_line_naming_the_file_and_key(judge_lm, tmp_path, body, needle, line):
    path = tmp_path / "bad.yaml"
    path.write_text(body)
    with pytest.raises(RecipeError) as err:
        make_model_scorer(judge_lm, options={"template": str(path)}).options()
    msg = err.value.one_line()
    assert needle in msg and str(path) in msg and "\n" not in msg
    if line is not None:
        assert err.value.line == line


def test_judge_answers_must_be_one_token(judge_lm, tmp_path, test_lists):
    path = tmp_path / "long.yaml"
    path.write_text("name: t\nprompt: '{query} {candidate}'\n"
                    "score: {kind: yes-no, positive: ' Absolutely certainly', negative: ' No'}\n")
    with pytest.raises(InvalidArgumentError, match="answer ' Absolutely certainly' of template 't' is"):
        make_model_scorer(judge_lm, options={"template": str(path)}).score(test_lists)
    with pytest.raises(GradebenchError, match="unknown judge template 'nope'"):
        make_model_scorer(judge_lm, options={"template": "nope"}).options()


def test_the_vllm_backend_is_refused_in_one_line_where_absent(judge_lm):
    import importlib.util

    import torch

    if importlib.util.find_spec("vllm") is not None and torch.cuda.is_available():
        pytest.skip("vLLM and a GPU are here: the backend runs (see test_vllm_judge_matches_transformers)")
    with pytest.raises(InvalidArgumentError, match="the vLLM backend needs") as err:
        make_model_scorer(judge_lm, options={"backend": "vllm"}).options()
    assert "backend=transformers" in err.value.one_line()


def test_vllm_judge_matches_transformers(judge_lm, test_lists):
    """On a GPU with vLLM installed: the two backends agree (bfloat16-level tolerance)."""
    import importlib.util

    import torch

    if importlib.util.find_spec("vllm") is None or not torch.cuda.is_available():
        pytest.skip("needs vLLM and a CUDA GPU (pip install 'gradebench[vllm]'): not available here")
    base = make_model_scorer(judge_lm, options={"dtype": "float32"}).score(test_lists)
    fast = make_model_scorer(judge_lm, options={"dtype": "float32", "backend": "vllm"}).score(test_lists)
    assert np.abs(base - fast)[test_lists.mask].max() < 1e-2


@pytest.mark.reference
def test_a_multi_class_cross_encoder_scores_the_chosen_class_probability(nli_classifier, tmp_path, test_lists):
    import torch
    from sentence_transformers import CrossEncoder

    path = tmp_path / "nli-ce"
    CrossEncoder(str(nli_classifier), device="cpu").save(str(path))
    q, c = _pairs(test_lists)
    with one_torch_thread():
        probs = CrossEncoder(str(path), device="cpu").predict(list(zip(q, c)), apply_softmax=True,
                                                              activation_fn=torch.nn.Identity(), batch_size=1)
        scorer = make_model_scorer(path)
        assert scorer.adapter == "cross-encoder" and scorer.options()["label"] == "entailment"
        assert np.abs(scorer.score(test_lists)[test_lists.mask] - probs[:, 1]).max() < TOL


def test_chat_reward_puts_the_system_turn_first(chat_reward):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(chat_reward))
    scorer = make_model_scorer(chat_reward, options={"system": "Be strict."})
    assert scorer.prompts(tok, ["q"], ["c"]) == ["<|system|> Be strict.\n<|user|> q\n<|assistant|> c\n"]
    assert scorer.options()["system"] == "Be strict."


def test_a_template_that_needs_a_chat_template_is_refused_without_one(tiny_gpt2, tmp_path):
    path = tmp_path / "chat.yaml"
    path.write_text("name: c\nprompt: '{query} {candidate}'\nchat: always\n"
                    "score: {kind: yes-no, positive: ' Yes', negative: ' No'}\n")
    with pytest.raises(InvalidArgumentError, match=r"asks for a chat template \(chat: always\)"):
        make_model_scorer(tiny_gpt2, "llm-judge", options={"template": str(path)}).options()


def test_half_precision_on_cpu(seq_classifier):
    with pytest.raises(InvalidArgumentError, match="dtype=float16 is not supported on CPU"):
        make_model_scorer(seq_classifier, options={"dtype": "float16", "device": "cpu"}).dtype  # noqa: B018
    scorer = make_model_scorer(seq_classifier, options={"dtype": "bfloat16", "device": "cpu"})
    assert scorer.dtype == "bfloat16" and scorer.tolerance() == 5e-2
    assert make_model_scorer(seq_classifier, options={"device": "cpu"}).dtype == "float32"
