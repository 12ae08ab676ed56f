"""Step templates of the two generator domains.

Each template has a slug (the tool name of the real-tool harness), a phase, and three paraphrases of
the step; paraphrase 0 is the wording the brief uses. Both pools hold 18 templates with the same
per-phase histogram (3, 3, 4, 4, 4), so the phase-consistent dependency sampler induces the same
DAG-shape distribution in either domain; their slugs are disjoint.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Template:
    slug: str
    phase: int
    paraphrases: tuple[str, str, str]

    @property
    def text(self) -> str:
        """The brief's wording of the step."""
        return self.paraphrases[0]


def _t(slug: str, phase: int, a: str, b: str, c: str) -> Template:
    return Template(slug, phase, (a, b, c))


PROCUREMENT: tuple[Template, ...] = (
    _t(
        "collect_requirements",
        0,
        "collect the project requirements from the stakeholders",
        "gather what the stakeholders need from the project",
        "pull together the stakeholder requirements",
    ),
    _t(
        "register_budget_code",
        0,
        "set up the project budget code in the finance system",
        "get the finance system to issue our budget code",
        "register the project's cost code with finance",
    ),
    _t(
        "draft_rfq",
        0,
        "draft the request for quotation",
        "write up the RFQ document",
        "put together the quotation request draft",
    ),
    _t(
        "send_rfq",
        1,
        "send the RFQ to the shortlisted vendors",
        "get the quotation request out to the shortlist",
        "issue the RFQ to the vendors on the shortlist",
    ),
    _t(
        "run_security_review",
        1,
        "run the security review of the candidate vendors",
        "have the candidate vendors vetted by security",
        "complete the vendor security assessment",
    ),
    _t(
        "tabulate_quotes",
        1,
        "tabulate the vendor quotes for comparison",
        "put the vendor quotes side by side in a table",
        "build the quote comparison sheet",
    ),
    _t(
        "select_vendor",
        2,
        "select the winning vendor and record the rationale",
        "pick the vendor and write down why",
        "make the vendor choice and document the reasoning",
    ),
    _t(
        "record_negotiation",
        2,
        "negotiate final pricing with the selected vendor",
        "settle the final price with the chosen vendor",
        "close the pricing negotiation with our vendor",
    ),
    _t(
        "file_signed_msa",
        2,
        "sign the master service agreement",
        "get the master services contract signed",
        "execute the MSA with the vendor",
    ),
    _t(
        "obtain_insurance_cert",
        2,
        "obtain the insurance certificate for the delivery",
        "get the certificate of insurance for the shipment",
        "sort out the delivery insurance paperwork",
    ),
    _t(
        "place_main_order",
        3,
        "place the main equipment order",
        "put in the primary equipment purchase order",
        "order the main equipment from the vendor",
    ),
    _t(
        "order_backup_units",
        3,
        "order the backup units",
        "purchase the spare units",
        "put in the order for the standby hardware",
    ),
    _t(
        "book_delivery_window",
        3,
        "book the delivery window with the carrier",
        "reserve a delivery slot with the shipping company",
        "schedule the carrier's delivery slot",
    ),
    _t(
        "schedule_installers",
        3,
        "schedule the installation crew",
        "book the installers for the on-site work",
        "line up the installation team's dates",
    ),
    _t(
        "arrange_training",
        4,
        "arrange the operator training sessions",
        "set up training for the operators",
        "organize the hands-on operator sessions",
    ),
    _t(
        "run_acceptance_test",
        4,
        "run the acceptance test on the installed equipment",
        "carry out the acceptance testing of the installation",
        "do the acceptance checks on the new equipment",
    ),
    _t(
        "book_waste_pickup",
        4,
        "book the packaging waste pickup",
        "arrange collection of the packing waste",
        "get the packaging debris hauled away",
    ),
    _t(
        "close_project",
        4,
        "close out the project file",
        "wrap up and archive the project",
        "do the formal project close-out",
    ),
)

RELEASE: tuple[Template, ...] = (
    _t(
        "freeze_scope",
        0,
        "freeze the release scope",
        "lock down what goes into the release",
        "declare the scope freeze for this release",
    ),
    _t(
        "open_release_ticket",
        0,
        "open the release tracking ticket",
        "create the ticket that tracks this release",
        "file the release tracker issue",
    ),
    _t(
        "draft_release_notes",
        0,
        "draft the release notes",
        "write the first version of the changelog",
        "put together the release notes draft",
    ),
    _t(
        "cut_release_branch",
        1,
        "cut the release branch",
        "create the branch for the release",
        "branch off the release line",
    ),
    _t(
        "bump_version",
        1,
        "bump the version number",
        "raise the version string for the release",
        "update the product version number",
    ),
    _t(
        "run_dependency_audit",
        1,
        "run the dependency license audit",
        "check the licenses of all dependencies",
        "audit our third-party package licenses",
    ),
    _t(
        "run_regression",
        2,
        "run the full regression suite",
        "execute all the regression tests",
        "do a complete regression test run",
    ),
    _t(
        "fix_blockers",
        2,
        "land the fixes for the release blockers",
        "merge the patches for the blocking bugs",
        "get the release-blocker fixes in",
    ),
    _t(
        "build_artifacts",
        2,
        "build the release artifacts",
        "produce the release binaries",
        "compile the packages for the release",
    ),
    _t(
        "sign_artifacts",
        2,
        "sign the release artifacts",
        "apply our signing key to the release packages",
        "put the cryptographic signatures on the binaries",
    ),
    _t(
        "stage_deployment",
        3,
        "deploy the build to staging",
        "push the release build to the staging environment",
        "roll the build onto staging",
    ),
    _t(
        "canary_rollout",
        3,
        "start the canary rollout",
        "release to the canary group first",
        "begin the canary deployment",
    ),
    _t(
        "update_docs",
        3,
        "publish the updated documentation",
        "put the new docs live",
        "release the refreshed user documentation",
    ),
    _t(
        "notify_support",
        3,
        "brief the support team on the changes",
        "walk the support staff through what changed",
        "give customer support the change briefing",
    ),
    _t(
        "full_rollout",
        4,
        "roll the release out to all users",
        "ship the release to everyone",
        "complete the general-availability rollout",
    ),
    _t(
        "tag_release",
        4,
        "tag the release in the repository",
        "put the version tag on the release commit",
        "create the git tag for this release",
    ),
    _t(
        "announce_release",
        4,
        "announce the release to customers",
        "send out the release announcement",
        "tell our customers the release is out",
    ),
    _t(
        "hold_retrospective",
        4,
        "hold the release retrospective",
        "run the post-release retro meeting",
        "do the lessons-learned session for the release",
    ),
)

POOLS: dict[str, tuple[Template, ...]] = {"procurement": PROCUREMENT, "release": RELEASE}

FILLERS: tuple[str, ...] = (
    "Thanks, that's helpful so far.",
    "FYI: the steering committee moved its meeting to Thursday.",
    "Quick note -- I'll be out for lunch for an hour.",
    "The client says they're happy with the pace.",
    "Just so you know, finance closes the books on the 28th.",
    "No action needed: I'm forwarding the meeting notes to the team.",
    "Good morning! Let's keep going today.",
    "Heads-up: the office will be closed next Monday.",
    "I just got off a call with the sponsor; nothing new for you.",
    "Thanks for the clear updates.",
    "Reminder: keep your replies short, please.",
    "The weekly status report went out this morning.",
    "Our legal team is reviewing an unrelated contract this week.",
    "I'm updating the project wiki, nothing for you to do.",
    "Coffee break -- back in ten minutes.",
    "The sponsor asked me to pass on her thanks.",
    "Noted, thanks.",
    "I'll check back in a bit.",
    "Let me review my notes before the next request.",
    "All good on my side.",
)
