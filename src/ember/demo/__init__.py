"""ember's demo: a small CNN trained on scikit-learn's bundled handwritten digits."""
