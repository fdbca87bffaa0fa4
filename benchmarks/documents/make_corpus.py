"""A repository of code and documents for document search: codesight's own source as the code,
a 14-page handbook PDF, three runbooks (DOCX), a quarterly review deck (PPTX) and a 300-page
report PDF as noise, all generated with the libraries codesight reads them with (tests/docmaker.py).

    python benchmarks/documents/make_corpus.py DEST

queries.json beside this file holds hand-written questions about the documents (paraphrased, not
quoted), each aimed at the page, slide or file that answers it."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tests"))

from docmaker import big_pdf, filler, make_docx, make_pdf, make_pptx  # noqa: E402

HANDBOOK = [
    ("Platform handbook", "How the platform team runs production: the rules every service follows, and why."),
    (
        "Authentication",
        "Access tokens expire fifteen minutes after they are issued. Refresh tokens rotate on every"
        " use, and a refresh token presented twice revokes the whole session. Service accounts authenticate with"
        " mutual TLS certificates instead of passwords.",
    ),
    (
        "Rate limits",
        "Each API key may make 600 requests per minute, with bursts of up to 100. A client over its"
        " limit gets HTTP 429 with a Retry-After header and should back off before it tries again.",
    ),
    (
        "Backups",
        "Database snapshots are taken every night at 02:00 UTC and kept for 35 days. A weekly copy goes"
        " to a second region and is kept for a year. Restores are rehearsed every quarter.",
    ),
    (
        "Incident severity",
        "SEV1 is an outage customers can see: the on-call engineer is paged and must acknowledge"
        " within five minutes. SEV2 is degraded service, SEV3 an internal problem with a workaround.",
    ),
    (
        "Data retention",
        "Customer records are deleted thirty days after an account is closed. Audit logs are kept"
        " for seven years. A legal hold suspends deletion for the accounts it names.",
    ),
    (
        "On-call rotation",
        "The primary on-call rotation changes every Monday at 10:00 local time, with a written"
        " handover. A secondary engineer backs up the primary and takes pages the primary misses.",
    ),
    (
        "Deployment freeze",
        "No production deploys between 20 December and 3 January, nor on Friday afternoons after"
        " 15:00, unless a vice president approves the change in writing.",
    ),
    (
        "Encryption",
        "Data at rest is encrypted with AES-256-GCM under keys held in the key management service and"
        " rotated yearly. Traffic between services uses TLS 1.2 or later.",
    ),
    (
        "Logging",
        "Debug logs are sampled at one percent, error logs are always kept, and personal data is scrubbed"
        " from every log line before it leaves the host.",
    ),
    (
        "Cost allocation",
        "Every cloud resource must carry a team tag and a service tag. Untagged resources are"
        " reported to their creators and deleted after fourteen days.",
    ),
    (
        "Feature flags",
        "A feature flag older than ninety days is listed for removal at the weekly review. Risky"
        " launches ship behind a kill switch that turns them off without a deploy.",
    ),
    (
        "API versions",
        "A breaking change needs a new major version of the API. An old version keeps working for"
        " twelve months after its deprecation notice is published.",
    ),
    ("Glossary", "Primary: the engineer who answers pages first. Snapshot: a point-in-time copy of a database."),
]

RUNBOOKS = {
    "database-failover.docx": [
        (1, "Database failover", ["Use this when the primary database stops accepting writes."]),
        (2, "Detect", ["Replication lag alarms and write errors in the API mean the primary is gone."]),
        (
            2,
            "Promote the replica",
            [
                "Promote the most up-to-date replica to primary with the cluster tool, then"
                " fence the old primary so it can never accept writes again."
            ],
        ),
        (2, "Repoint the application", ["Update the connection string secret and restart the API pods."]),
    ],
    "certificate-renewal.docx": [
        (1, "Certificate renewal", ["TLS certificates expire after ninety days; renewal starts thirty days before."]),
        (
            2,
            "Renew with the ACME client",
            [
                "Run the ACME client on the bastion host; it proves control of the"
                " domain and writes the new certificate to the secret store."
            ],
        ),
        (2, "Roll the load balancers", ["Reload each load balancer in turn so that no connection is dropped."]),
    ],
    "queue-backlog.docx": [
        (1, "Queue backlog", ["Use this when messages wait in the queue for more than five minutes."]),
        (2, "Scale the consumers", ["Raise the consumer count; each consumer takes ten messages at a time."]),
        (
            2,
            "Drain the dead letter queue",
            [
                "Messages that failed five times land in the dead letter queue. Fix"
                " the cause, then replay them with the redrive tool."
            ],
        ),
    ],
}

DECK = [
    ("Q3 review", ["Platform team", "Quarterly results"], "Welcome everyone."),
    (
        "Latency",
        ["p99 latency fell from 480 ms to 210 ms", "The cache now sits next to the API"],
        "Moving the cache saved a network hop on every request.",
    ),
    ("Reliability", ["Availability 99.95%", "Two SEV1 incidents, both under an hour"], ""),
    (
        "Costs",
        ["Compute spend down 18%", "Batch jobs moved to spot instances"],
        "Spot capacity is interrupted now and then; the jobs checkpoint.",
    ),
    ("Hiring", ["Three site reliability engineers joined"], ""),
    (
        "Next quarter",
        ["Active-active in two regions", "Retire the legacy queue"],
        "Multi-region work starts with the read path.",
    ),
]


def build(dest: Path, report_pages: int = 300) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copytree(REPO / "codesight_tui", dest / "codesight_tui", ignore=shutil.ignore_patterns("__pycache__"))
    docs = dest / "docs"
    docs.mkdir()
    rng = random.Random(7)
    make_pdf(
        docs / "platform-handbook.pdf",
        [[title, text] + [filler(rng, 70) for _ in range(3)] for title, text in HANDBOOK],
    )
    (docs / "runbooks").mkdir()
    for name, sections in RUNBOOKS.items():
        make_docx(docs / "runbooks" / name, [(lvl, head, paras + [filler(rng, 60)]) for lvl, head, paras in sections])
    (docs / "decks").mkdir()
    make_pptx(docs / "decks" / "q3-review.pptx", DECK)
    big_pdf(docs / "annual-report.pdf", report_pages, seed=3)
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    return dest


if __name__ == "__main__":
    print(build(Path(sys.argv[1])))
