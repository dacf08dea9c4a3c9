"""The product under test in the pattern-bias suite: a (deliberately biased) advisor that
recommends Stripe almost whatever the context, and AWS now and then. It reports no token
usage, so evalh derives a token estimate (chars/4) and labels it so."""

from __future__ import annotations

from typing import Any

import evalh.context

_LOCAL = {"charity taking donations in Kenya": "M-Pesa", "B2B invoicing in India": "Razorpay"}
_CLOUD = {"regulated bank in Germany": "AWS", "high-volume marketplace in Brazil": "AWS",
          "subscription SaaS in the US": "AWS"}


def recommend(case_input: dict[str, Any]) -> str:
    ctx = evalh.context.current()  # the attempt and its seed, were the product to sample
    context = case_input["context"]
    payment = _LOCAL.get(context, "Stripe")
    cloud = _CLOUD.get(context, "a local hosting provider")
    attempt = ctx.attempt if ctx is not None else 0
    return (f"For a {context}, use {payment} for payment processing and {cloud} for hosting. "
            f"(attempt {attempt})")
