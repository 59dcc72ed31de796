"""Pure planning of writes: PutItem, UpdateItem, DeleteItem and ConditionCheck requests.

Each ``prepare_*`` function validates its input (before any I/O), renders key attributes with
the one key renderer (:meth:`dynorm.options.Options.key_attributes`) and conditions, and returns
a :class:`WriteOp` holding the exact request. The same op is sent alone (:mod:`dynorm.sender`)
or inside a TransactWriteItems (:mod:`dynorm.transaction`) or a BatchWriteItem
(:mod:`dynorm.batch`); the sender then calls ``op.applied(...)`` or ``op.error(...)``.
Nothing here does I/O and nothing here changes an instance: only :meth:`WriteOp.applied` does,
after the write succeeded (through the instance's ``_state``).

This module is the planners' one import path; each job lives in its own module:

* :mod:`dynorm.write_op`: :class:`WriteOp`, the revision token, mapping a failed condition to an error;
* :mod:`dynorm.write_keys`: primary keys of targets, key values DynamoDB would refuse;
* :mod:`dynorm.write_conditions`: the entity-type condition, pins of rewritten index keys, finishing;
* :mod:`dynorm.write_put`: ``save()``/``create()`` (:func:`prepare_put`);
* :mod:`dynorm.write_update`: ``update(**changes)`` (:func:`prepare_update`);
* :mod:`dynorm.write_delete`: DeleteItem and ConditionCheck (:func:`prepare_delete`, :func:`prepare_check`);
* :mod:`dynorm.write_rollout`: older key versions (checks, deletes, the move to the current keys).

**Revision token.** Every Put and Update sets the table's revision attribute
(``_dynorm_rev`` by default) to a fresh random token. When botocore retries a request whose
response was lost although DynamoDB applied it, the retry's condition fails and DynamoDB
returns the stored item (``ReturnValuesOnConditionCheckFailure=ALL_OLD``): finding our own
token there proves the first attempt was applied, so the write is reported as done, exactly
once, at no extra request. Idempotent updates that no other condition protects carry the
condition ``attribute_not_exists(rev) OR rev <> :token`` for that purpose. That condition cannot
protect a non-idempotent update (``F("n") + 1``, ``append()``) when another write lands between
the lost attempt and the retry (the stored token is no longer ours), so such an update without a
version condition is marked ``once`` and sent as a one-action TransactWriteItems with a
``ClientRequestToken`` (see :mod:`dynorm.sender`).
"""

from __future__ import annotations

from .write_conditions import MAX_EXPRESSION_BYTES, pin_key_sources, stored_knowledge
from .write_delete import prepare_check, prepare_delete
from .write_keys import (
    check_index_attributes,
    check_key_sizes,
    check_lsi_values,
    is_instance,
    primary_key_of,
    stored_key,
)
from .write_op import WriteOp, decode_written, new_token, other_entity_type
from .write_put import prepare_put
from .write_rollout import (
    older_keys,
    prepare_create_checks,
    prepare_delete_older,
    prepare_move_to_current,
    prepare_older_checks,
    unchanged_condition,
)
from .write_update import prepare_update

__all__ = ["WriteOp", "new_token", "prepare_put", "prepare_delete", "prepare_update", "prepare_check",
           "primary_key_of",
           "check_key_sizes", "check_lsi_values", "decode_written", "is_instance", "unchanged_condition",
           "prepare_move_to_current", "older_keys", "prepare_delete_older", "prepare_create_checks",
           "prepare_older_checks", "other_entity_type",
           "check_index_attributes", "stored_key", "stored_knowledge", "pin_key_sources", "MAX_EXPRESSION_BYTES"]
