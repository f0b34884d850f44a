"""Messaging-system drivers behind one small interface, and the load workers that time them.

Drivers only move bytes (`api`); the framework owns timing (`recorder`, `worker`) and runs (`runner`).
"""

from __future__ import annotations

from drivers.api import Consumer, DeliveryCallback, Driver, MessageCallback, Producer, TopicSpec, load_driver

__all__ = ["Consumer", "DeliveryCallback", "Driver", "MessageCallback", "Producer", "TopicSpec", "load_driver"]
