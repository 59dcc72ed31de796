"""Authors, articles and keywords: composite sort keys, forward + inverse adjacency lists, GSI and LSI.

The category/year index is a multi-attribute GSI on the plain ``category`` and ``year``
attributes, as the article has it: no key text is written for it.

Keys are curie-like (``author:neumann``, ``article:theory_of_automata``). Keywords are written
twice, as a forward list (keyword -> articles, sort key carrying the author) and an inverse list
(article -> keywords), in the same transaction as the article.
"""

from __future__ import annotations

from typing import Any

import dynorm
from dynorm import Entity, Index, QuerySet, Table, fields


class Library(Table):
    class Meta:
        table_name = "library"
        gsis = {"ByCategory": {"pk": {"category": "S"}, "sk": {"year": "S"}}}
        lsis = {"year_lsi": "year"}


class Author(Entity):
    author_id = fields.String()
    name = fields.String()

    class Meta:
        table = Library
        entity_type = "author"
        pk = "author:{author_id}"
        sk = "author:{author_id}"


class ArticleQuerySet(QuerySet["Article"]):
    def by_author(self, author_id: str) -> ArticleQuerySet:
        """list all articles written by the author"""
        return self.filter(author_id=author_id)  # type: ignore[return-value]

    def by_author_chronological(self, author_id: str) -> ArticleQuerySet:
        """list all articles written by the author in chronological order (LSI on year)"""
        return self.filter(author_id=author_id).using("by_year")  # type: ignore[return-value]

    def in_category(self, category: str) -> ArticleQuerySet:
        """look up all articles for a given category in chronological order (multi-attribute GSI ByCategory)"""
        return self.filter(category=category)  # type: ignore[return-value]


class Article(Entity):
    author_id = fields.String()
    article_id = fields.String()
    title = fields.String()
    category = fields.String()
    year = fields.String()
    keywords = fields.List(null=True)

    objects = ArticleQuerySet.as_manager()

    class Meta:
        table = Library
        entity_type = "article"
        pk = "author:{author_id}"
        sk = "article:{article_id}"
        indexes = {
            "by_category": Index("ByCategory", pk=("category",), sk=("year",),
                                 comment="articles of a category in chronological order"),
            "by_year": Index("year_lsi", comment="an author's articles by year"),
        }


class KeywordQuerySet(QuerySet["KeywordArticle"]):
    def articles_for(self, keyword: str) -> KeywordQuerySet:
        """look up articles titles for given keywords (forward list)"""
        return self.filter(keyword=keyword)  # type: ignore[return-value]

    def articles_for_by(self, keyword: str, author_id: str) -> KeywordQuerySet:
        """look up article titles written by the author for a given keyword"""
        return self.filter(keyword=keyword, author_id=author_id)  # type: ignore[return-value]


class KeywordArticle(Entity):
    """Forward adjacency: keyword -> article (author in the sort key, title denormalized)."""

    keyword = fields.String()
    author_id = fields.String()
    article_id = fields.String()
    title = fields.String()

    objects = KeywordQuerySet.as_manager()

    class Meta:
        table = Library
        entity_type = "keyword_article"
        pk = "keyword:{keyword}"
        sk = "author:{author_id}#article:{article_id}"


class ArticleKeywordQuerySet(QuerySet["ArticleKeyword"]):
    def keywords_of(self, article_id: str) -> ArticleKeywordQuerySet:
        """look up all keywords of the article (inverse list)"""
        return self.filter(article_id=article_id)  # type: ignore[return-value]


class ArticleKeyword(Entity):
    """Inverse adjacency: article -> keyword."""

    article_id = fields.String()
    keyword = fields.String()

    objects = ArticleKeywordQuerySet.as_manager()

    class Meta:
        table = Library
        entity_type = "article_keyword"
        pk = "article:{article_id}"
        sk = "keyword:{keyword}"


def publish(author_id: str, article_id: str, title: str, category: str, year: str, keywords: list[str]) -> Article:
    """publish an article with its keyword lists, forward and inverse, in one TransactWriteItems"""
    article = Article(author_id=author_id, article_id=article_id, title=title, category=category, year=year,
                      keywords=keywords)
    with dynorm.transaction() as tx:
        tx.create(article)
        for kw in keywords:
            tx.create(KeywordArticle(keyword=kw, author_id=author_id, article_id=article_id, title=title))
            tx.create(ArticleKeyword(article_id=article_id, keyword=kw))
    return article


def register(author_id: str, name: str) -> Any:
    """register an author profile (PutItem, refusing to overwrite)"""
    return Author.objects.create(author_id=author_id, name=name)
