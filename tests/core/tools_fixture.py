"""Small tools defined in isolated registries, shared by the core tests."""

from typing import Literal

from pydantic import BaseModel, Field

from tool_selection import BaseTool


class Echo(BaseTool):
    NAME = "echo"
    description = "Repeat a message a number of times."
    category = "testing"

    class Arguments(BaseModel):
        message: str = Field(min_length=1, description="Text to repeat.")
        times: int = Field(default=1, ge=1, le=5, description="How many times.")
        mode: Literal["plain", "shout"] = Field(default="plain", description="Output style.")

    def execute(self, message: str, times: int, mode: str) -> str:
        text = " ".join([message] * times)
        return text.upper() if mode == "shout" else text


class Add(BaseTool):
    NAME = "add_numbers"
    description = "Add two numbers."
    category = "testing"

    class Arguments(BaseModel):
        a: float = Field(description="First addend.")
        b: float = Field(description="Second addend.")

    def execute(self, a: float, b: float) -> float:
        return a + b


class Now(BaseTool):
    NAME = "get_time"
    description = "Current time of a fixed clock."
    category = "testing"
    clock: str = "12:00"

    def execute(self) -> str:
        return self.clock
