"""The arxiv-like library's nine access patterns (``make demo MODEL=library``)."""

from __future__ import annotations

from typing import Any

from ..runner import Pattern
from .models import Article, ArticleKeyword, KeywordArticle, publish, register

TITLE = "arxiv-like library (dynamo library article): 9 access patterns"


def patterns(ids: dict[str, Any]) -> list[Pattern]:
    """The access patterns with the sample ids returned by ``load()``."""
    a, art, kw, cat = ids["author_id"], ids["article_id"], ids["keyword"], ids["category"]
    return [
        Pattern("register a profile", "register('church', 'Alonzo Church')",
                lambda: register("church", "Alonzo Church")),
        Pattern("publish an article (article + forward and inverse keywords, one transaction)",
                "publish('church', 'lambda_calculus', ..., keywords=['lambda', 'logic'])",
                lambda: publish("church", "lambda_calculus", "The calculi of lambda conversion", "Logic", "1941",
                                ["lambda", "logic"])),
        Pattern("fetch the article", f"Article.objects.get(author_id={a!r}, article_id={art!r})",
                lambda: Article.objects.get(author_id=a, article_id=art),
                lambda: Article.objects.filter(author_id=a, article_id=art).explain()),
        Pattern("list all articles written by the author", f"Article.objects.by_author({a!r})",
                lambda: list(Article.objects.by_author(a)), lambda: Article.objects.by_author(a).explain()),
        Pattern("look up articles titles for a keyword", f"KeywordArticle.objects.articles_for({kw!r})",
                lambda: list(KeywordArticle.objects.articles_for(kw)),
                lambda: KeywordArticle.objects.articles_for(kw).explain()),
        Pattern("look up article titles by the author for a keyword",
                f"KeywordArticle.objects.articles_for_by({kw!r}, {a!r})",
                lambda: list(KeywordArticle.objects.articles_for_by(kw, a)),
                lambda: KeywordArticle.objects.articles_for_by(kw, a).explain()),
        Pattern("look up all keywords of the article", f"ArticleKeyword.objects.keywords_of({art!r})",
                lambda: list(ArticleKeyword.objects.keywords_of(art)),
                lambda: ArticleKeyword.objects.keywords_of(art).explain()),
        Pattern("look up all articles of a category in chronological order", f"Article.objects.in_category({cat!r})",
                lambda: list(Article.objects.in_category(cat)), lambda: Article.objects.in_category(cat).explain()),
        Pattern("list all articles by the author in chronological order",
                f"Article.objects.by_author_chronological({a!r})",
                lambda: list(Article.objects.by_author_chronological(a)),
                lambda: Article.objects.by_author_chronological(a).explain()),
    ]
