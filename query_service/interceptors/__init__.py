"""The server's interceptor: metrics, auth, limits and size of every call, in one wrapper."""

from query_service.interceptors.call import CallInterceptor

__all__ = ["CallInterceptor"]
