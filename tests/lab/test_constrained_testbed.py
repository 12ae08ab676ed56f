"""The constrained agent under the testbed's brief (the main job's agent on the embedded model):
the grammar lists the brief's completion codes and a decline; the reply is one booking line
under the request's work order, or a refusal that decline-aware scoring reads as one; a turn with
no work order costs no call."""

from __future__ import annotations

import asyncio
import json

from taskgate import ChatClient, Endpoint, FakeServer
from taskgate.lab import EpisodeParams, generate_episode
from taskgate.lab.agents.tools import ACKNOWLEDGEMENT, DECLINED, ConstrainedToolAgent
from taskgate.llm.fake import script
from taskgate.protocol.bookings import parse_bookings
from taskgate.protocol.refusals import is_refusal
from taskgate.roles import ChatMessage


def test_the_constrained_agent_books_one_listed_code_or_declines() -> None:
    ep = generate_episode(EpisodeParams(steps=5, density=0.15, seed=100))
    codes = [s.code for s in ep.plan.steps.values()]
    system: ChatMessage = {"role": "system", "content": ep.brief}
    ask: ChatMessage = {"role": "user", "content": "Please draft the RFQ (#W1234)."}
    chat: ChatMessage = {"role": "user", "content": "Thanks for the updates."}
    replies = [json.dumps({"code": codes[1]}), json.dumps({"code": "decline"}), "free text"]
    with FakeServer(script(replies)) as srv:

        async def go() -> list[str]:
            async with ChatClient(Endpoint(base_url=srv.base_url, model="m")) as client:
                agent = ConstrainedToolAgent(client)
                return [
                    await agent.reply([system, ask]),
                    await agent.reply([system, ask]),
                    await agent.reply([system, chat]),  # no work order: no call
                    await agent.reply([system, ask]),  # a server that ignores the grammar
                ]

        booked, declined, chatted, ignored = asyncio.run(go())
    assert [(b.code, b.work_order) for b in parse_bookings(booked)] == [(codes[1], "#W1234")]
    assert declined == DECLINED and is_refusal(declined) and not parse_bookings(declined)
    assert chatted == ACKNOWLEDGEMENT and ignored == "free text"
    assert len(srv.requests) == 3
    enum = srv.requests[0]["response_format"]["schema"]["properties"]["code"]["enum"]
    assert enum == [*codes, "decline"]
