def robust_tool(input_data: str) -> str:
    """
    Example of robust error handling in custom tools.
    
    Args:
        input_data (str): Input data to process
        
    Returns:
        str: Processed result or error message
    """
    try:
        # Validate input
        if not input_data:
            return "Error: Input data is required"
        
        # Process data
        result = perform_operation(input_data)
        return result
        
    except ValueError as e:
        return f"Validation error: {str(e)}"
    except Exception as e:
        return f"Unexpected error: {str(e)}"
