"""Inference from estimates and their covariance: joint intervals, rank sets and pairwise
differences (:mod:`.joint`), interval bounds (:mod:`.intervals`) and the whole analysis of
a log (:mod:`.analysis`)."""
