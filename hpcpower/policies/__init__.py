"""Policies: queue orders, power managers and the controllers built from them."""
