"""ListTasks filtering, ordering and cursor pagination shared by the task stores.

Order: tasks with a status timestamp first, newest first, then by id, all
descending (the a2a-sdk order). The page token is the SDK's cursor: the sort
position of the last task returned, so it stays valid when that task changes.
"""

from __future__ import annotations

from collections.abc import Iterable

from a2a.types.a2a_pb2 import ListTasksRequest, ListTasksResponse, Task
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import InvalidParamsError
from a2a.utils.task import ListTasksCursor, decode_list_tasks_cursor, encode_list_tasks_cursor


def sort_key(task: Task) -> tuple[bool, int, str]:
    """``(has timestamp, timestamp ns, id)``; lists are sorted on it descending."""
    has_timestamp = task.HasField("status") and task.status.HasField("timestamp")
    return (has_timestamp, task.status.timestamp.ToNanoseconds() if has_timestamp else 0, task.id)


def matches(task: Task, params: ListTasksRequest) -> bool:
    """Whether ``task`` passes the request's context, status and time filters."""
    if params.context_id and task.context_id != params.context_id:
        return False
    if params.status and task.status.state != params.status:
        return False
    if params.HasField("status_timestamp_after"):
        if not task.status.HasField("timestamp"):
            return False
        after_ns: int = params.status_timestamp_after.ToNanoseconds()
        return bool(task.status.timestamp.ToNanoseconds() >= after_ns)
    return True


def list_response(tasks: Iterable[Task], params: ListTasksRequest) -> ListTasksResponse:
    """Filter, order and paginate ``tasks`` (one owner's) as ``params`` asks.

    Raises ``InvalidParamsError`` for a page token this server did not issue.
    """
    cursor: ListTasksCursor | None = None
    if params.page_token:
        cursor = decode_list_tasks_cursor(params.page_token)
        if cursor is None:
            raise InvalidParamsError(message="page_token is not a token this server issued")
    selected = sorted((t for t in tasks if matches(t, params)), key=sort_key, reverse=True)
    start = 0
    if cursor is not None:
        position = cursor.sort_key()
        start = next((i for i, t in enumerate(selected) if sort_key(t) < position), len(selected))
    page_size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
    page = selected[start : start + page_size]
    next_token = ""
    if page and start + page_size < len(selected):
        has_timestamp, nanos, task_id = sort_key(page[-1])
        next_token = encode_list_tasks_cursor(
            ListTasksCursor(timestamp_ns=nanos if has_timestamp else None, task_id=task_id)
        )
    return ListTasksResponse(
        tasks=page, next_page_token=next_token, total_size=len(selected), page_size=page_size
    )


__all__ = ["list_response", "matches", "sort_key"]
