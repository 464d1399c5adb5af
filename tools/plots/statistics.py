"""The statistic of relpos's report: a mean and the half-width of its 95% Student t interval,
t_0.975,n-1 * s / sqrt(n), as train/ablation/statistics.cpp computes it."""

import math

# t_0.975 by degrees of freedom, to 3 decimals: the values of Boost.Math's quantile that the
# report uses (train/ablation/statistics.cpp; scipy is not a dependency). Between two rows
# the smaller df is taken (a wider interval, by under 1%), from df 1000 on 1.962 (the
# limit is 1.960).
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
         9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
         16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074,
         23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045,
         30: 2.042, 35: 2.030, 40: 2.021, 50: 2.009, 60: 2.000, 80: 1.990, 100: 1.984,
         120: 1.980, 200: 1.972, 500: 1.965, 1000: 1.962}


def t_quantile_975(df):
    """t_0.975 with df degrees of freedom (NaN for df < 1)."""
    if df < 1:
        return math.nan
    return T_975[max(d for d in T_975 if d <= df)]


def mean_and_ci95(values):
    """Mean and the 95% t interval's half-width (NaN for fewer than two values)."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, math.nan
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return mean, t_quantile_975(len(values) - 1) * std / math.sqrt(len(values))
