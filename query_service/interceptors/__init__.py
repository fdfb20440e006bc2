"""Server interceptors, outermost first: metrics, auth, limits."""

from query_service.interceptors.auth import AuthInterceptor
from query_service.interceptors.limits import LimitsInterceptor
from query_service.interceptors.metrics import MetricsInterceptor

__all__ = ["AuthInterceptor", "LimitsInterceptor", "MetricsInterceptor"]
