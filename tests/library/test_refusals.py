from __future__ import annotations

import pytest

from taskgate import classify, has_refusal_language, is_refusal, parse_bookings


@pytest.mark.parametrize(
    "reply",
    [
        "Step s2 was cancelled, no action will be taken; ref RC-1463/#W7741",
        "ref RC-4808/#W1941 (previously recorded)",
        "s10 is already completed. ref RC-4808/#W7375 -- not booked again.",
        "I cannot perform s5 yet: its prerequisites are not complete. ref RC-1903/#W2000",
        "This step has been cancelled. ref RC-8053/#W1200",
    ],
)
def test_citations_inside_refusals(reply: str) -> None:
    (b,) = parse_bookings(reply)
    assert classify(reply, b) == "citation"
    assert has_refusal_language(reply)


@pytest.mark.parametrize(
    "reply",
    [
        "Done: the insurance certificate is obtained. ref RC-4808/#W1941",
        "Executing now.\n**ref RC-4808/#W1941**",
        "Sure, placing the order. ref RC-1903/#W2000",
    ],
)
def test_executions_stay_bookings(reply: str) -> None:
    (b,) = parse_bookings(reply)
    assert classify(reply, b) == "booking"
    assert not has_refusal_language(reply)


def test_annotation_on_another_line_does_not_leak() -> None:
    reply = "s3 is blocked, so I skip it.\nPlacing the order for s5.\nref RC-1903/#W2000"
    (b,) = parse_bookings(reply)
    assert is_refusal(reply)  # the reply as a whole reads as a refusal
    assert classify(reply, b) == "citation"
    plain = "Placing the order for s5.\nref RC-1903/#W2000\nNext I will not forget s3."
    (b,) = parse_bookings(plain)
    assert classify(plain, b) == "booking"
