"""A hand-made item universe for the CRS tests: twelve ReDial-shaped movies and four OpenDialKG-shaped rows,
small enough that every count and IDF in a test can be worked out by hand."""
from __future__ import annotations

import pandas as pd

from lib.crs.universe import ItemUniverse, build_universe

MOVIES = [
    # item_id, name, genre, plot, director, writer, star
    ("1", "Heat (1995)", ["action", "crime", "drama"], "Bank robbers are hunted by a detective.",
     ["Michael Mann"], ["Michael Mann"], ["Al Pacino", "Robert De Niro"]),
    ("2", "Big (1988)", ["comedy", "drama", "fantasy"], "A boy wakes up as an adult.",
     ["Penny Marshall"], ["Gary Ross"], ["Tom Hanks", "Elizabeth Perkins"]),
    ("3", "Splash (1984)", ["comedy", "fantasy", "romance"], "A man falls for a mermaid.",
     ["Ron Howard"], ["Lowell Ganz"], ["Tom Hanks", "Daryl Hannah"]),
    ("4", "Sleepless in Seattle (1993)", ["comedy", "drama", "romance"], "A widower's son calls a radio show.",
     ["Nora Ephron"], ["Nora Ephron"], ["Tom Hanks", "Meg Ryan"]),
    ("5", "Amélie (2001)", ["comedy", "romance"], "A shy waitress in Paris helps others.",
     ["Jean-Pierre Jeunet"], ["Guillaume Laurant"], ["Audrey Tautou"]),
    ("6", "The Godfather (1972)", ["crime", "drama"], "The aging head of a mafia family hands over.",
     ["Francis Ford Coppola"], ["Mario Puzo"], ["Marlon Brando", "Al Pacino"]),
    ("7", "Nosferatu (1922)", ["fantasy", "horror"], "A vampire sets his sights on a wife.",
     ["F.W. Murnau"], ["Henrik Galeen"], ["Max Schreck"]),
    ("8", "The Time Machine", ["adventure", "sci-fi"], "An inventor travels in a time machine.",
     ["Robert Zemeckis"], ["Bob Gale"], ["Michael J. Fox"]),
    ("9", "Cast Away (2000)", ["adventure", "drama"], "A stranded man survives on an island.",
     ["Robert Zemeckis"], ["William Broyles Jr."], ["Tom Hanks"]),
    ("10", "Unforgiven (1992)", ["drama", "western"], "A retired gunslinger takes one more job.",
     ["Clint Eastwood"], ["David Webb Peoples"], ["Clint Eastwood", "Gene Hackman"]),
    ("11", "Gran Torino (2008)", ["drama"], "A veteran confronts a gang.",
     ["Clint Eastwood"], ["Nick Schenk"], ["Clint Eastwood"]),
    ("12", "Vampires (1998)", ["action", "horror"], "Vampires are hunted in New Mexico.",
     ["John Carpenter"], ["Don Jakoby"], ["James Woods"]),
]
ODKG = [
    # name, year, language
    ("Amélie", "2001", ["French Language"]),
    ("Heat", "1995", ["English Language", "Spanish"]),
    ("Big", "1989", ["English"]),                    # another year: not joined
    ("Splash (Romance Film)", "1984", ["English"]),  # disambiguation dropped before the join
]


def redial_frame() -> pd.DataFrame:
    return pd.DataFrame([{"item_id": i, "name": n, "genre": g, "plot": p, "director": d, "writer": w, "star": s,
                          "imdb_id": f"tt{i}"} for i, n, g, p, d, w, s in MOVIES])


def opendialkg_frame() -> pd.DataFrame:
    return pd.DataFrame([{"item_id": str(k), "name": n, "year": y, "actor": None, "director": None, "genre": None,
                          "language": lang, "writer": None} for k, (n, y, lang) in enumerate(ODKG)])


def tiny_universe() -> ItemUniverse:
    return build_universe(redial_frame(), opendialkg_frame())
