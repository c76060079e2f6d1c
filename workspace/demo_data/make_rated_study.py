"""Regenerate the demo's rated study: `zh_rated_study_dialogues.jsonl` and `_ratings.csv`.

    .venv/bin/python workspace/demo_data/make_rated_study.py

What it writes (both CC0, made by this script, not collected from people):

- The dialogues: the 24 knowledge scenarios of `zh_knowledge.jsonl`, each answered by four
  systems — `知识模板`, a template baseline that states one to three of the scenario's own
  knowledge triples ("霸王别姬的导演是陈凯歌。"); the two demo retrieval systems (`检索-BM25` and
  `检索-TFIDF`), run here through a real static run on a scratch embedded database (leaving the
  scenario's own dialogue out, they answer fluently from other scenarios); and `随机回复`, the
  reference reply of another scenario. 96 dialogues.
- The ratings: three **simulated** raters answer the MSDE rubric's dialogue-level questions for
  each dialogue by applying the rubric's own level definitions to what the reply contains, then
  make rater-specific mistakes (seeded): `info` counts the scenario's knowledge points (triple
  objects) the reply states (0 none, 1 one, 2 several); `know` is 0 when the reply states
  knowledge of another scenario, else 2 when it uses this one's, else 1; `coh` follows how much
  the reply takes up the last user turn (shared character bigrams). They exist so a report on
  the demo shows real structure (a grounded system, weak ones, a random one; metrics that track
  knowledge use) — no figure from them says anything about people.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

DIALOGUES_FILE = HERE / "zh_rated_study_dialogues.jsonl"
RATINGS_FILE = HERE / "zh_rated_study_ratings.csv"
SYSTEMS = ("检索-BM25", "检索-TFIDF")
RANDOM_SYSTEM = "随机回复"
TEMPLATE_SYSTEM = "知识模板"
# (rater, probability of answering one level off): careful, average, hasty.
RATERS = (("simulated-rater-1", 0.1), ("simulated-rater-2", 0.2), ("simulated-rater-3", 0.3))
SEED = 2026
TURN_FIELDS = ("speaker", "text", "references")


def _knowledge_items(grounding: dict, *, parts: tuple[int, ...] = (0, -1)) -> set[str]:
    """The subjects and objects of the scenario's knowledge triples (≥ 2 characters); with
    ``parts=(-1,)`` the objects only: the knowledge points a reply can state."""
    items = set()
    for triple in grounding.get("knowledge", []):
        for part in (triple[i] for i in parts):
            if isinstance(part, str) and len(part.strip()) >= 2:
                items.add(part.strip())
    return items


def _bigrams(text: str) -> set[str]:
    text = "".join(ch for ch in text if ch.strip())
    return {text[i : i + 2] for i in range(len(text) - 1)}


def rubric_levels(
    reply: str, last_user_turn: str, grounding: dict, every_item: set[str]
) -> dict[str, int]:
    """What a careful rater answers, by the MSDE rubric's level definitions (see the docstring)."""
    mentioned = {point for point in _knowledge_items(grounding, parts=(-1,)) if point in reply}
    foreign = {item for item in every_item - _knowledge_items(grounding) if item in reply}
    info = 0 if not mentioned else (1 if len(mentioned) == 1 else 2)
    know = 0 if foreign else (2 if mentioned else 1)
    shared = len(_bigrams(reply) & _bigrams(last_user_turn))
    coh = 2 if shared >= 3 else (1 if shared >= 1 else 0)
    return {"info": info, "coh": coh, "know": know}


def _context_turns(context: list[str]) -> list[dict]:
    """The scenario's context as turns: the last utterance is the user's, speakers alternate."""
    last = len(context) - 1
    return [
        {"speaker": "user" if (last - i) % 2 == 0 else "system", "text": text}
        for i, text in enumerate(context)
    ]


def _answered(level: int, slip: float, rng: random.Random) -> int:
    if rng.random() < slip:
        level += rng.choice((-1, 1))
    return min(2, max(0, level))


def _generate_dialogues() -> list[dict]:
    from config.embedded import embedded_environment

    os.environ.update(embedded_environment("rated-study-"))
    import django

    django.setup()
    from django.core.management import call_command

    from chat.models import Backend, Dataset
    from chat.services.dialogue_io import dialogue_export_lines
    from chat.services.static_runs import static_run_create, static_run_execute

    call_command("migrate", verbosity=0)
    call_command("load_demo", stdout=io.StringIO())
    run = static_run_create(
        name="rated study",
        dataset=Dataset.objects.get(name="演示·知识对话"),
        backends=list(Backend.objects.filter(name__in=SYSTEMS)),
    )
    static_run_execute(run=run)
    keep = ("system", "skill", "language", "grounding", "turns")
    suffix = {"检索-BM25": "bm25", "检索-TFIDF": "tfidf"}
    dialogues = []
    for line in dialogue_export_lines(campaign=run.campaign):
        exported = json.loads(line)
        dialogue = {key: value for key, value in exported.items() if key in keep}
        # What a reply is, not when and how it was made: the file stays the same on a re-run.
        dialogue["turns"] = [
            {key: value for key, value in turn.items() if key in TURN_FIELDS}
            for turn in dialogue["turns"]
        ]
        dialogue["id"] = f"{exported['scenario']['sample']}-{suffix[exported['system']]}"
        dialogues.append(dialogue)
    return dialogues


def main() -> None:
    rng = random.Random(SEED)
    dialogues = _generate_dialogues()
    samples = [
        json.loads(line)
        for line in (HERE / "zh_knowledge.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    by_context = {tuple(s["context"]): s for s in samples}
    for n, sample in enumerate(samples):
        other = samples[(n + 1 + rng.randrange(len(samples) - 1)) % len(samples)]
        turns = _context_turns(sample["context"])
        reply = other["references"][0]
        turns.append({"speaker": "system", "text": reply, "references": sample["references"]})
        dialogues.append(
            {
                "id": f"{sample['id']}-random",  # same scenario, another one's reply
                "system": RANDOM_SYSTEM,
                "skill": "knowledge",
                "language": "zh",
                "grounding": sample["grounding"],
                "turns": turns,
            }
        )
    for n, sample in enumerate(samples):
        triples = [t for t in sample["grounding"].get("knowledge", []) if len(t) == 3]
        chosen = rng.sample(triples, min(len(triples), 1 + n % 3))
        facts = "".join(f"{s}的{r}是{o}。" for s, r, o in chosen)
        goal = [g for g in sample["grounding"].get("goal", []) if g != "START"]
        reply = (f"说到{goal[0]}，" if goal and n % 2 == 0 else "") + facts
        turns = _context_turns(sample["context"])
        turns.append({"speaker": "system", "text": reply, "references": sample["references"]})
        dialogues.append(
            {
                "id": f"{sample['id']}-template",
                "system": TEMPLATE_SYSTEM,
                "skill": "knowledge",
                "language": "zh",
                "grounding": sample["grounding"],
                "turns": turns,
            }
        )
    all_items = set().union(*(_knowledge_items(s["grounding"]) for s in samples))
    rows = []
    for dialogue in sorted(dialogues, key=lambda d: (d["system"], d["id"])):
        turns = dialogue["turns"]
        context = tuple(t["text"] for t in turns[:-1])
        sample = by_context.get(context)
        grounding = sample["grounding"] if sample else dialogue["grounding"]
        levels = rubric_levels(turns[-1]["text"], turns[-2]["text"], grounding, all_items)
        for rater, slip in RATERS:
            for question, level in levels.items():
                rows.append((dialogue["id"], rater, question, _answered(level, slip, rng)))
    with DIALOGUES_FILE.open("w", encoding="utf-8") as handle:
        for dialogue in sorted(dialogues, key=lambda d: (d["system"], d["id"])):
            handle.write(json.dumps(dialogue, ensure_ascii=False) + "\n")
    with RATINGS_FILE.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(("dialogue_id", "rater", "question", "value"))
        writer.writerows(rows)
    print(f"{len(dialogues)} dialogues, {len(rows)} ratings")


if __name__ == "__main__":
    main()
