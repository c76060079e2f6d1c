"""Data and waiting helpers shared by the static-run tests."""

from __future__ import annotations

import time
from collections.abc import Callable

from chat.models import Backend, Dataset, Sample, Skill, StaticRun
from core.models import JobStatus

CONTEXTS = [
    (["你好，最近在看什么电影？"], "在看《流浪地球》，你看过吗？"),
    (["你喜欢哪位导演？"], "我很喜欢郭帆导演。"),
    (["周末有什么安排？", "想去爬山。", "去哪座山？"], "打算去香山看红叶。"),
    (["推荐一本书吧。"], "可以读读《三体》。"),
    (["今天天气怎么样？"], "晴天，适合出门。"),
    (["你会做饭吗？"], "会做番茄炒蛋。"),
    (["最近工作忙吗？"], "有点忙，不过还好。"),
    (["喜欢听什么音乐？"], "喜欢听周杰伦的歌。"),
    (["<script>alert(1)</script> 你好"], "你好呀"),
    (["你养宠物吗？"], "养了一只猫。"),
]


def make_dataset(name: str = "静态测试集", n: int = len(CONTEXTS)) -> Dataset:
    skill = Skill.objects.get(key="chitchat")
    dataset = Dataset.objects.create(
        name=name, skill=skill, language="zh", source_format=Dataset.Format.JSONL, sample_count=n
    )
    Sample.objects.bulk_create(
        Sample(
            dataset=dataset,
            index=i,
            external_id=f"s{i}",
            skill=skill,
            context=CONTEXTS[i % len(CONTEXTS)][0],
            references=[CONTEXTS[i % len(CONTEXTS)][1]],
            grounding={"situation": "闲聊"} if i == 0 else {},
        )
        for i in range(n)
    )
    return dataset


def retrieval_backend(
    name: str, dataset: Dataset, method: str = "tfidf", limit: int = 2
) -> Backend:
    return Backend.objects.create(
        name=name,
        adapter=Backend.Adapter.RETRIEVAL,
        config={"method": method, "dataset": dataset.name},
        concurrency_limit=limit,
        timeout_s=30,
    )


def openai_backend(name: str, base_url: str, *, limit: int, retries: int = 0) -> Backend:
    return Backend.objects.create(
        name=name,
        adapter=Backend.Adapter.OPENAI,
        config={"base_url": base_url, "model": "fake", "max_retries": retries},
        concurrency_limit=limit,
        timeout_s=10,
    )


def wait_for(condition: Callable[[], bool], *, timeout: float = 60, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")


def run_finished(run: StaticRun) -> bool:
    run.refresh_from_db()
    return run.status in (
        JobStatus.DONE,
        JobStatus.FAILED,
        JobStatus.CANCELLED,
    )
