"""Maximum bipartite matching (Hopcroft-Karp), for matching expected tool calls to actual ones.

Greedy first-fit is wrong for unordered matching: an expected call with loose arguments can take the
actual call that only a stricter expected call could have used, and the stricter one then fails
although a full assignment exists. A maximum matching finds that assignment when there is one.
O(E * sqrt(V)); trajectories have tens of calls, so this is about correctness, not speed.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

__all__ = ["maximum_matching"]

_FREE = -1


def maximum_matching(adjacency: Sequence[Sequence[int]], right_count: int) -> dict[int, int]:
    """A maximum matching of a bipartite graph: `{left: right}`.

    `adjacency[left]` lists the right vertices (0..right_count-1) that `left` may be matched with.
    Among maximum matchings, lower-numbered right vertices are preferred where the search allows,
    so equal inputs give equal answers.
    """
    left_count = len(adjacency)
    match_left = [_FREE] * left_count
    match_right = [_FREE] * right_count
    distance: list[float] = [0.0] * left_count
    unreachable = math.inf

    def layers() -> bool:
        """BFS from free left vertices; True when some augmenting path exists."""
        queue: deque[int] = deque()
        for left in range(left_count):
            if match_left[left] == _FREE:
                distance[left] = 0
                queue.append(left)
            else:
                distance[left] = unreachable
        found = False
        while queue:
            left = queue.popleft()
            for right in adjacency[left]:
                partner = match_right[right]
                if partner == _FREE:
                    found = True
                elif distance[partner] == unreachable:
                    distance[partner] = distance[left] + 1
                    queue.append(partner)
        return found

    def augment(left: int) -> bool:
        """DFS along the BFS layers; flips one augmenting path when it finds one."""
        for right in adjacency[left]:
            partner = match_right[right]
            if partner == _FREE or (distance[partner] == distance[left] + 1 and augment(partner)):
                match_left[left] = right
                match_right[right] = left
                return True
        distance[left] = unreachable
        return False

    while layers():
        for left in range(left_count):
            if match_left[left] == _FREE:
                augment(left)
    return {left: right for left, right in enumerate(match_left) if right != _FREE}
