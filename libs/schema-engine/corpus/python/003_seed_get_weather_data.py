from typing import List, Optional
from pydantic import BaseModel, Field

class WeatherData(BaseModel):
    temperature: float = Field(..., description="Temperature in Celsius")
    humidity: float = Field(..., description="Humidity percentage")
    conditions: str = Field(..., description="Weather conditions")

def get_weather_data(location: str, units: str = "metric") -> WeatherData:
    """
    Get current weather data for a specified location.
    
    Args:
        location (str): Location name or coordinates
        units (str): Measurement units ("metric" or "imperial")
        
    Returns:
        WeatherData: Structured weather information
    """
    # Implementation would call weather API
    # This is a placeholder for demonstration
    return WeatherData(
        temperature=22.5,
        humidity=65.0,
        conditions="Partly cloudy"
    )
