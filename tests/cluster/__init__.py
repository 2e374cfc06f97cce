"""The real-cluster tier: a package, so that its cluster is stopped once its tests end."""
