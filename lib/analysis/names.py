"""Statistic names, one name per statistic, shared by every table that reports one (the report card, the bias
battery, the anchors): a table column holds these strings, so a chapter never spells a statistic twice."""

KAPPA = "Cohen κ"
WEIGHTED_KAPPA = "quadratic-weighted κ"
BINARY_KAPPA = "Cohen κ, binarised"
ALPHA = "Krippendorff α (ordinal)"
EXPECTED_RHO = "Spearman ρ of E[g] or score"  # an LLM judge's expected grade, a baseline's continuous score
# mean over queries (per-query ρ, constant ones skipped)
EXPECTED_RHO_WITHIN = "Spearman ρ of E[g] or score, within queries"
SPEARMAN = "Spearman ρ"
KENDALL = "Kendall τ"
POSITION_CONSISTENCY = "position consistency"
MARGIN = "separation margin"  # lowest score of a normal day − score of the degraded day (> 0: an alert can separate)
DRIFT = "mean |ΔE[g]| between runs"  # the same T = 0 requests sent again on a fresh server (lib.judges.drift)
STATISTICS = (KAPPA, WEIGHTED_KAPPA, BINARY_KAPPA, ALPHA, EXPECTED_RHO, EXPECTED_RHO_WITHIN, SPEARMAN, KENDALL,
              POSITION_CONSISTENCY, MARGIN, DRIFT)
