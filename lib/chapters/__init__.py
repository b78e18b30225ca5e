"""The top floor: one module per chapter (``ch01`` … ``ch07``) holding what a notebook would otherwise loop over
or write as prose — the orchestration that builds a chapter's tables, its generated "what the numbers say",
threats and front-page headline. Each function is tested on small hand-made tables. Notebooks keep the
narrative, parameters, calls, tables and figures.

Arrows point down: a chapter module may import anything in ``lib``; nothing in ``lib`` imports a chapter module
except the front page, which reads :data:`HEADLINES` (filled by importing every chapter here).
"""
from lib.chapters import ch01, ch02, ch03, ch04, ch05, ch06, ch07
from lib.chapters.headline import HEADLINES, Headline

__all__ = ["HEADLINES", "Headline", "ch01", "ch02", "ch03", "ch04", "ch05", "ch06", "ch07"]
