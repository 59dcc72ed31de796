"""A small arxiv: authors publishing articles with keywords, each in one transaction."""

from __future__ import annotations

import random
from typing import Any

from .models import publish, register

AUTHORS = {"neumann": "John von Neumann", "turing": "Alan Turing", "curry": "Haskell Curry",
           "hopper": "Grace Hopper", "lovelace": "Ada Lovelace"}
CATEGORIES = ["Computer Science", "Mathematics", "Logic"]
KEYWORDS = ["theory", "automata", "lambda", "computation", "logic", "compilers", "games"]


def load(seed: int = 11) -> dict[str, Any]:
    """Register authors and publish 60 articles; return counts and sample ids."""
    rng = random.Random(seed)
    for aid, name in AUTHORS.items():
        register(aid, name)
    n = 0
    for aid in AUTHORS:
        for k in range(12):
            kws = rng.sample(KEYWORDS, rng.randint(1, 3))
            publish(aid, f"{aid}_{k}", f"On {kws[0]} ({aid}, part {k})", rng.choice(CATEGORIES),
                    str(rng.randint(1936, 1990)), kws)
            n += 1
    return {"counts": {"authors": len(AUTHORS), "articles": n}, "author_id": "neumann", "article_id": "neumann_3",
            "keyword": "theory", "category": "Computer Science"}
