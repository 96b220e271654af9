"""A user's agent, as a new user writes one: one tool, the reference loop. Tests and bench/trials.py copy this
file into the temporary projects they build (the scenario is `weather_agent:weather`)."""

from harness import ToolRegistry, run_loop

tools = ToolRegistry()


@tools.tool(input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
def get_weather(city: str) -> dict:
    """Today's weather in a city."""
    return {"city": city, "forecast": "sunny"}


def weather(client):
    return run_loop(client, system="Answer about the weather.", user="Weather in Paris?", tools=tools,
                    model="claude-sonnet-5")
