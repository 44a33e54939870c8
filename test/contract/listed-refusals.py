"""A schemathesis check for test/contract/schemathesis.test.ts (loaded with SCHEMATHESIS_HOOKS).

Where schemathesis.toml lets an operation answer 400 to a schema-valid request (a rule that spans
fields or stored state, which the document cannot state), that 400 must be one of the rules listed
for the operation: its message must match a listed `message` pattern. Any other 400 to a
schema-valid request is a failure, so a new rule the document does not state cannot hide behind an
operation's exemption.

    [[operations]]
    include-name = "PUT /workspaces/{id}"
    checks.positive_data_acceptance.expected-statuses = [..., "400"]
    checks.refusal_names_a_listed_rule.rules = [
      { field = "name", rule = "the path's name: a workspace is never renamed", message = "^Workspace name cannot be changed\\.$" },
    ]
"""

import json
import os
import re

import schemathesis
from schemathesis.core.transport import expand_status_codes
from schemathesis.specs.openapi.checks import is_unexpected_http_status_case

NAME = "refusal_names_a_listed_rule"

# Report-only mode, to collect every unlisted refusal of one run at once: with LISTED_REFUSALS_REPORT set
# to a file path, each unlisted refusal is appended there (one JSON object a line) instead of failing.
REPORT = os.environ.get("LISTED_REFUSALS_REPORT")


def _rules(ctx):
    rules = ctx.config.custom_kwargs.get(NAME, {}).get("rules", [])
    for rule in rules:
        if not isinstance(rule, dict) or not all(isinstance(rule.get(key), str) for key in ("field", "rule", "message")):
            raise AssertionError(f"{NAME}: each listed rule needs field, rule (why) and message (a pattern), got {rule!r}")
    return rules


@schemathesis.check
def refusal_names_a_listed_rule(ctx, response, case):
    meta = case.meta
    if meta is None or is_unexpected_http_status_case(case) or not meta.generation.mode.is_positive:
        return True
    if response.status_code != 400:
        return None
    # Where 400 is not expected at all, positive_data_acceptance reports it.
    if 400 not in expand_status_codes(ctx.config.positive_data_acceptance.expected_statuses or []):
        return None
    rules = _rules(ctx)
    try:
        body = response.json()
        # The SDK endpoint answers in the SDK's own error shape, {error_message, error_module}.
        message = body["error_message"] if "error_message" in body else body["message"]
    except Exception:
        raise AssertionError(f"A 400 without a {{code, message}} body: {response.text[:300]!r}") from None
    if any(re.search(rule["message"], message) for rule in rules):
        return None
    if REPORT:
        with open(REPORT, "a", encoding="utf-8") as out:
            out.write(json.dumps({"operation": case.operation.label, "message": message, "body": case.body, "query": case.query}, default=repr) + "\n")
        return None
    listed = "\n".join(f"  - {rule['field']}: {rule['rule']}" for rule in rules) or "  (none)"
    raise AssertionError(
        f"A schema-valid request was refused for a rule this operation does not list:\n  {message}\n"
        f"Listed:\n{listed}\n"
        "State the rule in the route's schema, or, if it spans fields or stored state, list it in "
        "test/contract/schemathesis.toml with its reason."
    )
