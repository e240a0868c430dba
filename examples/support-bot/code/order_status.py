def order_status(order_id: str) -> dict:
    """Tell the customer where their order is, in one sentence."""
    # `tools` and `context` are globals of the CES Python runtime: this calls the
    # getOrder tool of the orders toolset and remembers the status for the rest of
    # the conversation.
    order = tools.getOrder({"orderId": order_id})
    status = order.get("status", "unknown")
    context.variables["last_order_status"] = status
    return {"orderId": order_id, "message": f"Your order {order_id} is {status}."}
