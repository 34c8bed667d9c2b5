"""Invoices for a small subscription business: plans, line items and the monthly run."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from decimal import Decimal, ROUND_HALF_UP

log = logging.getLogger(__name__)

VAT_RATES = {"DE": Decimal("0.19"), "FR": Decimal("0.20"), "NL": Decimal("0.21")}


@dataclass
class LineItem:
    """One line of an invoice."""

    description: str
    quantity: int
    unit_price: Decimal

    @property
    def total(self) -> Decimal:
        return self.unit_price * self.quantity


@dataclass
class Invoice:
    """An invoice for one customer and one month."""

    customer: str
    country: str
    month: dt.date
    items: list[LineItem] = field(default_factory=list)

    def add(self, description: str, quantity: int, unit_price: Decimal) -> None:
        """Adds a line; quantities must be positive."""
        if quantity <= 0:
            raise ValueError(f"quantity must be positive, got {quantity}")
        self.items.append(LineItem(description, quantity, unit_price))

    def net(self) -> Decimal:
        return sum((item.total for item in self.items), Decimal(0))

    def vat(self) -> Decimal:
        # Customers outside the table pay no VAT here (reverse charge).
        rate = VAT_RATES.get(self.country, Decimal(0))
        return (self.net() * rate).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)

    def gross(self) -> Decimal:
        return self.net() + self.vat()

    def render(self) -> str:
        """The invoice as plain text, one line per item, totals last."""
        lines = [f"Invoice {self.customer} {self.month:%Y-%m}"]
        for item in self.items:
            lines.append(
                f"{item.description:<30} {item.quantity:>4} x {item.unit_price:>8} = {item.total:>9}"
            )
        lines.append(f"{'net':<30} {self.net():>25}")
        lines.append(f"{'VAT':<30} {self.vat():>25}")
        lines.append(f"{'total':<30} {self.gross():>25}")
        return "\n".join(lines)


def monthly_run(customers, month: dt.date) -> list[Invoice]:
    """Invoices every active customer for `month`; customers without a plan are skipped."""
    invoices = []
    for customer in customers:
        plan = customer.get("plan")
        if plan is None:
            log.info("skipping %s: no plan", customer["name"])
            continue
        invoice = Invoice(customer["name"], customer["country"], month)
        invoice.add(f"{plan['name']} plan", customer.get("seats", 1), Decimal(plan["price"]))
        for extra in customer.get("extras", []):
            invoice.add(extra["name"], 1, Decimal(extra["price"]))
        invoices.append(invoice)
    return invoices


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    demo = [{"name": "Acme", "country": "DE", "plan": {"name": "Team", "price": "49.00"}}]
    for invoice in monthly_run(demo, dt.date.today()):
        print(invoice.render())
