"""Variance of any estimator's influence: the multiway cluster sandwich (:mod:`.sandwich`),
resampling (:mod:`.resampling`), the ``auto`` rule (:mod:`.method_choice`), per-axis
diagnostics (:mod:`.diagnostics`) and the reference distributions (:mod:`.reference`)."""
