"""
What the scenario scripts beside it share: each scenario is a function a user could write with one of
the PyPI clients; `scenario` runs it and prints one JSON line {"name", "ok", "detail"}, `finish` exits
non-zero when any failed. PAS_CLIENT says which client is installed ('legacy' everysk 1.0.17, or
'lib' everysk-lib); the address and credentials come from the environment as a user sets them.
"""
import json
import os
import sys
import traceback

CLIENT = os.environ['PAS_CLIENT']
WORKSPACE = 'clients'
RESULTS = []


def scenario(function):
    try:
        detail = function()
        RESULTS.append({'name': function.__name__, 'ok': True, 'detail': detail})
    except Exception as error:  # pylint: disable=broad-except
        RESULTS.append(
            {
                'name': function.__name__,
                'ok': False,
                'detail': '%s: %s\n%s' % (type(error).__name__, error, traceback.format_exc()),
            }
        )
    print(json.dumps(RESULTS[-1], default=str), flush=True)
    return function


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def finish():
    sys.exit(0 if all(result['ok'] for result in RESULTS) else 1)
