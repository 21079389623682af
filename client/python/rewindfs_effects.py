"""External effects through the rewindfs effect ledger, for Python agents.

A separate module (stdlib only) so that it works with any client object
that has ``call(op, **args)`` returning a reply's ``ok`` and raising an
exception with ``code``, ``message`` and ``details`` on an error reply
(``rewindfs_client.RewindClient`` does). Operations and the gate's table:
proto/PROTOCOL.md "Effects".

``guarded_call`` wraps a function that acts outside the workspace: begin
(the recovery gate may refuse: nothing is called), sent, the call with a
timeout, complete with its outcome and evidence. Errors are classified: a
timeout, or an error after the request may have reached the target, is
``unknown`` (fail closed); only an error that proves nothing was sent
(connection refused, a name that does not resolve) is ``failed``.

    from rewindfs_client import RewindClient
    from rewindfs_effects import guarded_call, EffectRefused

    c = RewindClient.from_store(store_dir)
    c.call("effect_register", tool="create_ticket", **{"class": "compensable"})
    try:
        r = guarded_call(c, "create_ticket", "http://tracker/tickets",
                         lambda occ: post_ticket(title, key=occ["identity"]),
                         request={"method": "POST", "body": {"title": title}})
    except EffectRefused as e:
        print(e.message)   # the gate's advice for the model
"""
import concurrent.futures
import socket

#: Default time the wrapped call may take before its outcome is unknown, seconds.
DEFAULT_CALL_TIMEOUT = 30.0

#: Error codes of a begin the gate refused (PROTOCOL.md "Errors").
GATE_REFUSALS = ("E_EFFECT_DONE", "E_EFFECT_COMPENSATE_ONLY", "E_EFFECT_IRREVERSIBLE", "E_EFFECT_UNKNOWN")


class EffectRefused(Exception):
    """The gate refused the effect; nothing was called. ``message`` is the gate's advice, ``gate`` its GateInfo."""

    def __init__(self, code, gate):
        super().__init__(gate.get("message", code))
        self.code = code
        self.gate = gate
        self.message = gate.get("message", code)


class EffectCallFailed(Exception):
    """The wrapped call failed or timed out; ``status`` is what the ledger recorded (failed or unknown)."""

    def __init__(self, occurrence, status, message):
        super().__init__(message)
        self.occurrence = occurrence
        self.status = status


def classify_error(err):
    """``failed`` when ``err`` proves the request never left this host (refused, unresolvable, unreachable), else ``unknown``."""
    if isinstance(err, (ConnectionRefusedError, socket.gaierror)):
        return "failed"
    reason = getattr(err, "reason", None)  # urllib.error.URLError wraps the socket error
    if isinstance(reason, (ConnectionRefusedError, socket.gaierror)):
        return "failed"
    return "unknown"


def gate_message(err):
    """The gate's decision as one short message for a model, from EffectRefused or a refused begin's error; None for other errors."""
    if isinstance(err, EffectRefused):
        return err.message
    if getattr(err, "code", None) in GATE_REFUSALS:
        return ((getattr(err, "details", None) or {}).get("gate") or {}).get("message") or str(err)
    return None


def guarded_call(client, tool, target, fn, request=None, identity=None, run=None, attempt=None,
                 pre_state=None, compensates=None, timeout=DEFAULT_CALL_TIMEOUT, outcome=None, classify=None):
    """Run ``fn(occ)`` as a guarded effect of registered ``tool`` on ``target``.

    ``occ`` is the begin's reply ({occurrence, identity, gate}); send
    ``occ["identity"]`` as the idempotency key where the target takes one.
    ``outcome(result)`` returns ("confirmed" | "failed", evidence) (default:
    confirmed, no evidence); ``classify(err)`` returns "failed" or "unknown"
    (default classify_error). ``timeout`` in seconds; past it the outcome is
    recorded unknown (the call keeps running in its thread, its result is
    ignored).

    Returns {"result", "occurrence", "status", "gate"}. Raises EffectRefused
    (the gate said no; nothing was called), EffectCallFailed (recorded
    failed or unknown), or the client's error when the ledger could not
    record a step (the daemon then makes the occurrence unknown).
    """
    args = dict(tool=tool, target=target, request=request, identity=identity, run=run, attempt=attempt,
                preState=pre_state, timeoutMs=max(1, int(timeout * 1000) + 60000))
    try:
        if compensates is None:
            occ = client.call("effect_begin", **args)
        else:
            occ = client.call("effect_compensate", compensates=compensates, **args)
    except Exception as e:
        if getattr(e, "code", None) in GATE_REFUSALS:
            raise EffectRefused(e.code, (getattr(e, "details", None) or {}).get("gate") or {"message": str(e)}) from e
        raise
    n = occ["occurrence"]
    client.call("effect_sent", occurrence=n)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        result = pool.submit(fn, occ).result(timeout=timeout)
    except concurrent.futures.TimeoutError as e:
        client.call("effect_complete", occurrence=n, status="unknown", evidence={"error": f"no answer within {timeout} s", "timeout": True})
        raise EffectCallFailed(n, "unknown", f"effect #{n} has an unknown outcome: no answer within {timeout} s (the gate refuses it again until it is reconciled)") from e
    except Exception as e:
        status = (classify or classify_error)(e)
        client.call("effect_complete", occurrence=n, status=status, evidence={"error": str(e), "type": type(e).__name__, "timeout": False})
        tail = " (the gate refuses it again until it is reconciled)" if status == "unknown" else ""
        raise EffectCallFailed(n, status, f"effect #{n} {'has an unknown outcome' if status == 'unknown' else 'failed'}: {e}{tail}") from e
    finally:
        pool.shutdown(wait=False)
    status, evidence = outcome(result) if outcome is not None else ("confirmed", None)
    client.call("effect_complete", occurrence=n, status=status, evidence=evidence)
    return {"result": result, "occurrence": n, "status": status, "gate": occ["gate"]}
