"""Reading judge replies, G-Eval weighting, samples and position-swap aggregation."""

from __future__ import annotations

import json
import math

import pytest

from annotation.presets import preset_specs
from annotation.rubric_spec import validate_spec
from judges import parsing

MSDE = validate_spec(preset_specs()["msde"])
YESNO = validate_spec(preset_specs()["yesno-single-turn"])
INFO, COH = MSDE.question("info"), MSDE.question("coh")
GRAMMAR, UNACCEPTABLE = YESNO.question("grammatical"), YESNO.question("unacceptable")


def test_a_well_formed_answer_is_parsed_with_its_rationale():
    parsed = parsing.parse_reply(
        '{"rationale": "信息丰富", "scores": {"info": 2, "coh": 1}}', [INFO, COH]
    )
    assert parsed.status == "ok"
    assert parsed.values == {"info": 2.0, "coh": 1.0}
    assert parsed.rationale == "信息丰富"


@pytest.mark.parametrize(
    "text",
    [
        '好的，评价如下：\n```json\n{"rationale": "ok", "scores": {"info": "2", "coh": 1}}\n```',
        'Sure! {"info": 2, "coh": 1} is my verdict.',
        "info: 2\ncoh: 1",
        "丰富度：2\n连贯性：1",
        '{"scores": {"info": "2分", "coh": 1.0}}',
    ],
)
def test_answers_around_or_without_json_are_still_read(text):
    parsed = parsing.parse_reply(text, [INFO, COH])
    assert parsed.status == "ok", parsed.problems
    assert parsed.values == {"info": 2.0, "coh": 1.0}


def test_an_out_of_range_value_is_refused_not_clipped():
    parsed = parsing.parse_reply('{"scores": {"info": 3, "coh": 1}}', [INFO, COH])
    assert parsed.status == "incomplete"
    assert parsed.values == {"coh": 1.0}
    assert any("info" in p for p in parsed.problems)


def test_truncated_refused_and_unparseable_replies_are_told_apart():
    assert parsing.parse_reply('{"rationale": "the', [INFO], finish_reason="length").status == (
        "truncated"
    )
    assert parsing.parse_reply("", [INFO], refusal="I can't do that").status == "refused"
    assert parsing.parse_reply("I'm sorry, but I cannot rate this.", [INFO]).status == "refused"
    assert parsing.parse_reply("这段对话不错。", [INFO]).status == "unparseable"


def test_yes_no_answers_in_any_language():
    parsed = parsing.parse_reply(
        json.dumps({"scores": {"grammatical": "是", "unacceptable": "no"}}, ensure_ascii=False),
        [GRAMMAR, UNACCEPTABLE],
    )
    assert parsed.values == {"grammatical": 1.0, "unacceptable": 0.0}


def test_pairwise_verdicts():
    parsed = parsing.parse_reply(
        '{"winners": {"info": "B", "coh": "Tie"}}', [INFO, COH], mode="pairwise"
    )
    assert parsed.values == {"info": "B", "coh": "tie"}


def test_geval_weights_the_scale_values_by_their_probabilities():
    top = [
        {"token": "2", "logprob": math.log(0.6)},
        {"token": "1", "logprob": math.log(0.3)},
        {"token": "0", "logprob": math.log(0.05)},
        {"token": "x", "logprob": math.log(0.05)},  # not a scale value: ignored
    ]
    expected = (2 * 0.6 + 1 * 0.3 + 0 * 0.05) / 0.95
    assert parsing.geval_expectation(INFO, top) == pytest.approx(expected)


def test_geval_of_a_negative_yes_no_question_is_the_probability_of_the_positive_answer():
    top = [{"token": "yes", "logprob": math.log(0.2)}, {"token": "no", "logprob": math.log(0.8)}]
    # "unacceptable" scores 1 for "no".
    assert parsing.geval_expectation(UNACCEPTABLE, top) == pytest.approx(0.8)


def test_geval_finds_the_token_that_carries_each_value():
    text = '{"rationale": "ok", "scores": {"info": 2, "coh": 1}}'
    pieces = ['{"rationale": "ok", "scores": {"info": ', "2", ', "coh": ', "1", "}}"]
    assert "".join(pieces) == text
    tables = {
        "2": [("2", math.log(0.5)), ("1", math.log(0.5))],
        "1": [("1", math.log(0.9)), ("0", math.log(0.1))],
    }
    tokens = [
        {
            "token": p,
            "logprob": 0.0,
            "top_logprobs": [{"token": t, "logprob": lp} for t, lp in tables.get(p, [(p, 0.0)])],
        }
        for p in pieces
    ]
    parsed = parsing.parse_reply(text, [INFO, COH])
    scores = parsing.geval_scores(text, tokens, [INFO, COH], parsed)
    assert scores == {"info": pytest.approx(1.5), "coh": pytest.approx(0.9)}


def test_samples_are_averaged_or_voted():
    assert parsing.aggregate_samples(INFO, [2, 1, 1], "mean") == pytest.approx(4 / 3)
    assert parsing.aggregate_samples(INFO, [2, 1, 1], "majority") == 1.0
    assert parsing.aggregate_samples(INFO, [2, 1], "majority") == 1.0  # a tie goes to the lower
    assert parsing.aggregate_samples(UNACCEPTABLE, [1.0, 1.0, 0.0], "majority") == 0.0


@pytest.mark.parametrize(
    ("forward", "backward", "score", "verdict", "flip"),
    [
        ("A", "B", 1.0, "1", False),  # system 1 preferred in both orders
        ("B", "A", 0.0, "2", False),
        ("A", "A", 0.5, "tie", True),  # always the first shown: position bias, a tie
        ("A", "tie", 0.75, "tie", True),  # MT-Bench: a win needs both orders
        ("tie", "tie", 0.5, "tie", False),
        ("A", None, 1.0, "1", None),
    ],
)
def test_position_swap_aggregation(forward, backward, score, verdict, flip):
    assert parsing.swap_aggregate(forward, backward) == (score, verdict)
    assert parsing.position_flip(forward, backward) is flip


def test_the_rate_limiter_spaces_request_starts():
    import asyncio
    import time

    from judges.client import rate_limiter

    limiter = rate_limiter(None, 50.0)
    assert rate_limiter(None, 50.0) is limiter  # one per backend and rate in the process

    async def starts() -> list[float]:
        async def one() -> float:
            await limiter.wait()
            return time.monotonic()

        return sorted(await asyncio.gather(*(one() for _ in range(6))))

    times = asyncio.run(starts())
    assert times[-1] - times[0] >= 5 * (1 / 50.0) * 0.9
