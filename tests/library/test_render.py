"""Byte-exact renderings, checked against the Verbatim blocks of the paper itself."""

from __future__ import annotations

from conftest import paper_verbatim_after
from taskgate import (
    Booking,
    Plan,
    Policy,
    Revision,
    TaskMachine,
    render_brief,
    render_checklist,
    render_directive,
    render_rejection,
    render_same_turn_notice,
)


def test_original_brief_is_byte_exact(plan5: Plan) -> None:
    expected = paper_verbatim_after("Brief (system prompt, all arms; original brief)")
    assert render_brief(plan5, amended=False) == expected


def test_amended_brief_inserts_the_one_shot_sentence(plan5: Plan) -> None:
    sentence = paper_verbatim_after("One-shot sentence (amended brief)")
    original = render_brief(plan5, amended=False)
    amended = render_brief(plan5, amended=True)
    head, protocol = original.split("\n\nEXECUTION PROTOCOL")
    assert amended == f"{head}\n\n{sentence}\n\nEXECUTION PROTOCOL{protocol}"


def test_opening_checklist_is_byte_exact(plan5: Plan) -> None:
    expected = paper_verbatim_after("Text-checklist rendering (checklist arm)")
    assert render_checklist(TaskMachine(plan5)) == expected


def test_checklist_moves_with_receipts_and_revision(plan5: Plan) -> None:
    m = TaskMachine(plan5)
    req = m.open_request("s4")
    m.submit(Booking("RC-4107", req.work_order), Policy.UNGATED)
    m.revise(Revision(cancel="s3"))
    lines = render_checklist(m).splitlines()
    assert lines[2:5] == ["- s2: TODO (ready)", "- s3: CANCELLED", "- s4: DONE"]


def _directives() -> list[str]:
    return paper_verbatim_after("Directive and refusal strings").splitlines()


def test_five_directives_and_notice_are_byte_exact() -> None:
    cancelled, done, redo, blocked, eligible, notice = _directives()
    plan = Plan.model_validate(
        {
            "steps": {
                "sA": {"code": "RC-1111"},
                "sB": {"code": "RC-2222"},
                "sX": {"code": "RC-1234", "deps": ["sA", "sB"]},
            }
        }
    )
    m = TaskMachine(plan)
    m.open_request("sX", work_order="#W5678")
    assert render_directive(m) == blocked
    v = m.submit(Booking("RC-1234", "#W5678"))
    assert render_rejection(v, Booking("RC-1234", "#W5678")) == notice
    m.revise(Revision(rewires={"sX": ()}))
    m.open_request("sX")
    assert render_directive(m) == eligible
    m.submit(Booking("RC-1234", m.request.work_order if m.request else ""))
    m.open_request("sX")
    assert render_directive(m) == done
    m.open_request("sX", explicit_redo=True)
    assert render_directive(m) == redo
    m.revise(Revision(cancel="sX"))
    m.open_request("sX")
    assert render_directive(m) == cancelled
    m.open_request(None)
    assert render_directive(m) is None


def test_same_turn_notice_extends_the_rejection(chain: Plan) -> None:
    m = TaskMachine(chain)
    req = m.open_request("s3")
    b = Booking("RC-1003", req.work_order)
    v = m.submit(b)
    same = render_same_turn_notice(v, b)
    assert same.startswith(render_rejection(v, b) + " ")
    assert "do not present that work as done" in same


def test_every_refusal_reason_has_a_notice(chain: Plan) -> None:
    m = TaskMachine(chain)
    first = m.open_request("s1")
    cases = [Booking("RC-1002", first.work_order), Booking("RC-9", first.work_order)]
    m.submit(Booking("RC-1001", first.work_order))
    second = m.open_request(None)
    cases += [
        Booking("RC-1001", first.work_order),
        Booking("RC-1001", "#W1"),
        Booking("RC-1004", second.work_order),
    ]
    notices = set()
    for b in cases:
        v = m.judge(b, Policy.REQUEST_BOUND)
        assert not v.admitted
        notices.add(render_rejection(v, b))
    assert len(notices) == len(cases)


def test_matcher_and_compiler_prompts_are_byte_exact() -> None:
    from taskgate.llm.prompts import GRAPH_PROMPT, matcher_prompt, revision_prompt

    steps = [
        ("s1", "obtain the insurance certificate for the delivery"),
        ("s2", "sign the master service agreement"),
        ("s3", "negotiate final pricing with the selected vendor"),
        ("s4", "set up the project budget code in the finance system"),
        ("s5", "place the main equipment order"),
    ]
    assert matcher_prompt(
        steps, "Send the RFQ out to the shortlisted vendors (#W4242)."
    ) == paper_verbatim_after("Matcher prompt.")
    graph, revision = _two_verbatims_after("Compiler prompts.")
    assert graph == GRAPH_PROMPT
    message = (
        "Change of plan from the client: CANCEL the step 'sign the master service agreement' "
        "entirely -- it is no longer needed."
    )
    assert revision_prompt(steps, message) == revision


def _two_verbatims_after(marker: str) -> tuple[str, str]:
    from conftest import paper_text

    tex = paper_text()
    at = tex.index(marker)
    blocks = []
    for _ in range(2):
        start = tex.index("\n", tex.index("\\begin{Verbatim}", at)) + 1
        end = tex.index("\\end{Verbatim}", start)
        blocks.append(tex[start:end].rstrip("\n"))
        at = end
    return blocks[0], blocks[1]
