"""The ACUTE pairing planner: balance per scenario, never the same dialogue twice, N raters."""

from collections import Counter
from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.pairwise import comparative_questions, left_first, pairs_for_scenarios, place_pairs
from annotation.presets import acute_eval_spec, preset_specs
from annotation.rubric_spec import validate_spec


@st.composite
def designs(draw):
    n_systems = draw(st.integers(2, 5))
    n_scenarios = draw(st.integers(1, 6))
    scenarios = {}
    next_id = 0
    for s in range(n_scenarios):
        # A scenario may lack some systems (not every system collected every scenario).
        present = draw(st.sets(st.integers(0, n_systems - 1), min_size=0, max_size=n_systems))
        scenarios[s] = {}
        for system in sorted(present):
            scenarios[s][system] = next_id
            next_id += 1
    per_pair = draw(st.integers(1, 3))
    n_raters = draw(st.integers(1, 12))
    seed = draw(st.text(max_size=5))
    return scenarios, per_pair, list(range(100, 100 + n_raters)), seed


@given(designs())
@settings(max_examples=300)
def test_every_system_pair_is_compared_once_in_every_scenario_both_systems_have(design):
    scenarios, _per_pair, _raters, _seed = design
    pairs = pairs_for_scenarios(scenarios)
    counts = Counter((p.scenario, frozenset(p.systems)) for p in pairs)
    for scenario, by_system in scenarios.items():
        for a, b in combinations(by_system, 2):
            assert counts[(scenario, frozenset((a, b)))] == 1
    assert len(pairs) == sum(len(s) * (len(s) - 1) // 2 for s in scenarios.values())


@given(designs())
@settings(max_examples=300)
def test_no_rater_sees_a_dialogue_twice_and_no_pair_gets_more_than_n_raters(design):
    scenarios, per_pair, raters, seed = design
    pairs = pairs_for_scenarios(scenarios)
    placements = place_pairs(
        pairs=pairs,
        raters=raters,
        per_pair=per_pair,
        holders={},
        seen={},
        excluded={},
        loads={},
        seed=seed,
    )
    shown = Counter()
    for p in placements:
        shown[(p.rater, p.left)] += 1
        shown[(p.rater, p.right)] += 1
        assert {p.left, p.right} == set(p.pair)
    assert max(shown.values(), default=1) == 1
    per = Counter(p.pair for p in placements)
    assert all(n <= per_pair for n in per.values())


@given(designs())
@settings(max_examples=300)
def test_with_enough_raters_every_pair_gets_n_distinct_raters(design):
    scenarios, per_pair, _raters, seed = design
    pairs = pairs_for_scenarios(scenarios)
    widest = max((len(s) * (len(s) - 1) // 2 for s in scenarios.values()), default=0)
    # One rater can always take one pair of a scenario: enough raters fill every pair.
    raters = list(range(max(widest * per_pair, 1)))
    placements = place_pairs(
        pairs=pairs,
        raters=raters,
        per_pair=per_pair,
        holders={},
        seen={},
        excluded={},
        loads={},
        seed=seed,
    )
    per = Counter(p.pair for p in placements)
    assert all(per[p.key] == per_pair for p in pairs)
    assert len({(p.pair, p.rater) for p in placements}) == len(placements)


def test_the_side_is_a_fair_reproducible_coin_per_pair_and_rater():
    draws = [left_first(seed="7", pair=(i, i + 1), rater=r) for i in range(50) for r in range(20)]
    assert draws == [
        left_first(seed="7", pair=(i, i + 1), rater=r) for i in range(50) for r in range(20)
    ]
    assert 400 < sum(draws) < 600


def test_acute_questions_are_the_published_wording_and_a_rubric_is_asked_comparatively():
    acute = comparative_questions(validate_spec(acute_eval_spec()))
    assert {q.key: q.label["en"] for q in acute} == {
        "engaging": "Who would you prefer to talk to for a long conversation?",
        "interesting": "If you had to say one of these speakers is interesting and one is "
        "boring, who would you say is more interesting?",
        "humanlike": "Which speaker sounds more human?",
        "knowledgeable": "If you had to say that one speaker is more knowledgeable and one is "
        "more ignorant, who is more knowledgeable?",
    }
    assert all(q.label["zh-hans"] and q.label["ja"] for q in acute)
    likert = comparative_questions(validate_spec(preset_specs()["likert"]))
    assert [q.key for q in likert] == ["naturalness", "topic_following", "topic_providing"]
    assert likert[0].label["zh-hans"] == "哪段对话中的模型在「自然性：对话是自然的。」上更好？"
    # seed 001's gates are not asked comparatively.
    gated = comparative_questions(validate_spec(preset_specs()["yesno-single-turn"]))
    assert gated and all("gate" not in q.key for q in gated)
