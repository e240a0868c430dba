def refund_policy(order_total: float, days_since_delivery: int) -> dict:
    """Decide whether an order can be refunded and how much."""
    if days_since_delivery > 30:
        return {"eligible": False, "reason": "outside the 30-day window"}
    fee = 0.0 if order_total >= 50 else 4.99
    return {"eligible": True, "refund": round(order_total - fee, 2)}
