"""``ember.distributions`` (``torch.distributions``): probability distributions with sampling,
log-densities and KL divergences, built on ember ops so gradients flow through ``rsample`` and
``log_prob``. Random draws come from ember's generator (``manual_seed`` reproduces them).
See docs/distributions.md.
"""

from __future__ import annotations

from . import constraint_registry, constraints, exp_family, transforms  # noqa: F401
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution, ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from .relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy",
    "Chi2", "ComposeTransform", "Dirichlet", "Distribution", "ExpTransform", "Exponential",
    "ExpRelaxedCategorical", "ExponentialFamily", "Gamma", "Geometric", "Gumbel", "HalfCauchy",
    "HalfNormal", "Independent", "Laplace", "LogNormal", "LogitRelaxedBernoulli",
    "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
    "Pareto", "RelaxedBernoulli", "RelaxedOneHotCategorical", "Weibull", "FisherSnedecor",
    "InverseGamma", "Kumaraswamy", "LogisticNormal", "LowRankMultivariateNormal",
    "OneHotCategoricalStraightThrough", "OneHotCategorical", "Poisson", "PowerTransform",
    "SigmoidTransform", "SoftplusTransform", "StudentT", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "constraints", "identity_transform", "kl_divergence",
    "register_kl", "transforms", "biject_to", "transform_to", "constraint_registry",
    "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
    "SoftmaxTransform", "StickBreakingTransform", "CatTransform", "ContinuousBernoulli",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "GeneralizedPareto", "LKJCholesky",
    "ReshapeTransform", "StackTransform", "VonMises", "Wishart",
]


def __getattr__(name: str) -> object:
    from .._missing import attribute_error

    raise attribute_error("torch.distributions", name)
