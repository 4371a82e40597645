#!/usr/bin/env python3
"""tools/train-drafter/make_prompts: writes prompts.jsonl, the open-ended chat prompts that `bee train-data`
answers to make drafter training data.

Every word below was written for this project (topic seeds and request patterns, combined by a seeded random
generator), so the prompt set is the project's own work under the project's licence: nothing is copied from a
data set. The output is deterministic: running it again gives the same file. The prompts of
bench/prompts/*.jsonl are never written, so a head is never trained on the prompts it is benchmarked on.

    python3 tools/train-drafter/make_prompts.py [--out tools/train-drafter/prompts.jsonl] [--n 4000]
"""
import argparse
import glob
import json
import os
import random

TOPICS = [
    "photosynthesis", "black holes", "the water cycle", "plate tectonics", "vaccines", "the immune system",
    "climate change", "renewable energy", "solar panels", "wind turbines", "nuclear fusion", "electric cars",
    "the internet", "how search engines rank pages", "public-key cryptography", "machine learning",
    "neural networks", "compilers", "operating systems", "databases", "cloud computing", "blockchains",
    "the stock market", "inflation", "compound interest", "credit scores", "budgeting", "index funds",
    "the Roman Empire", "the Renaissance", "the Industrial Revolution", "ancient Egypt", "the printing press",
    "the Silk Road", "the French Revolution", "the moon landing", "the history of writing", "the Cold War",
    "volcanoes", "earthquakes", "hurricanes", "coral reefs", "rainforests", "deserts", "glaciers", "bees",
    "octopuses", "whales", "bird migration", "dinosaurs", "evolution", "DNA", "antibiotics", "sleep",
    "meditation", "healthy eating", "running", "strength training", "stretching", "hydration", "stress",
    "learning a new language", "public speaking", "time management", "remote work", "job interviews",
    "writing a resume", "negotiating a salary", "starting a small business", "marketing on a small budget",
    "baking bread", "making pasta from scratch", "fermentation", "coffee brewing", "tea", "spices",
    "vegetarian cooking", "meal planning", "composting", "growing tomatoes", "houseplants", "beekeeping",
    "chess", "soccer", "basketball", "the Olympic Games", "cycling", "hiking", "camping", "photography",
    "painting with watercolors", "learning the guitar", "music theory", "jazz", "classical music", "film editing",
    "writing poetry", "writing a novel", "Shakespeare", "Greek mythology", "fairy tales", "science fiction",
    "the solar system", "Mars", "telescopes", "the speed of light", "gravity", "magnetism", "electricity",
    "batteries", "semiconductors", "3D printing", "robots", "drones", "smartphones", "GPS", "Wi-Fi",
    "recycling", "plastic pollution", "clean water", "urban planning", "public transport", "bridges",
    "skyscrapers", "the human heart", "the brain", "memory", "habits", "motivation", "friendship",
    "parenting", "pets", "dogs", "cats", "traveling on a budget", "packing for a trip", "jet lag",
    "volunteering", "recycling electronics", "first aid", "fire safety", "online privacy", "passwords",
    "spreadsheets", "version control with git", "open-source software", "unit testing", "debugging",
    "the Linux command line", "regular expressions", "HTTP", "JSON", "APIs", "sorting algorithms",
    "recursion", "hash tables", "binary search", "prime numbers", "probability", "statistics", "fractions",
    "geometry", "the Pythagorean theorem", "calculus", "logic puzzles", "maps", "time zones", "calendars",
    "volcanic islands", "the ocean floor", "tides", "weather forecasts", "rainbows", "clouds", "snowflakes",
]

PEOPLE = [
    "a lighthouse keeper", "a young inventor", "a retired teacher", "a lost robot", "a curious cat",
    "a baker in a small town", "an astronaut on her first mission", "a dragon who is afraid of fire",
    "a detective who cannot remember names", "two friends on a road trip", "a gardener", "a shy musician",
    "a girl who can talk to birds", "an old fisherman", "a time traveler", "a librarian", "a street painter",
    "a chess champion", "a nurse on a night shift", "a boy who finds a map", "a family of foxes",
    "a programmer who fixes bugs in dreams", "a ship's cook", "a mountain guide", "a beekeeper",
]

SITUATIONS = [
    "finds a mysterious letter", "has to cross a frozen lake", "wakes up in a different century",
    "loses something important", "meets a talking tree", "must solve a puzzle before sunrise",
    "opens a shop that sells memories", "gets stuck in an elevator with a stranger", "wins a strange prize",
    "learns a secret about their town", "builds a machine that makes rain", "discovers a hidden garden",
    "has one day to make things right", "receives a message from the future", "helps a stranger in a storm",
]

THINGS = [
    "the sea", "autumn leaves", "a city at night", "the first snow", "an old house", "a train journey",
    "morning coffee", "the stars", "a quiet library", "summer rain", "a lost key", "mountains", "friendship",
    "the moon", "a garden in spring", "a river", "a candle", "the wind", "a busy market", "home",
]

CODE_TASKS = [
    "reverses a string", "checks whether a number is prime", "counts the words in a text",
    "finds the largest number in a list", "removes duplicates from a list while keeping the order",
    "converts Celsius to Fahrenheit", "checks whether a word is a palindrome", "computes the factorial of n",
    "returns the n-th Fibonacci number", "merges two sorted lists", "reads a CSV file and sums a column",
    "validates an email address", "flattens a nested list", "computes the average of a list of numbers",
    "counts how often each character appears in a string", "sorts a list of dictionaries by a key",
    "finds the common elements of two lists", "generates a random password", "checks if brackets are balanced",
    "converts a number to Roman numerals", "splits a list into chunks of size n", "computes the GCD of two numbers",
    "implements binary search", "transposes a matrix", "parses a date string", "capitalizes every word",
]

LANGUAGES = ["Python", "JavaScript", "C", "C++", "Rust", "Go", "Java", "Bash", "SQL"]

GOALS = [
    "sleep better", "save money each month", "focus while studying", "learn to cook", "get fit at home",
    "make new friends in a new city", "stop procrastinating", "read more books", "improve my handwriting",
    "become a better listener", "keep my plants alive", "organize my closet", "drink less coffee",
    "prepare for a marathon", "learn to draw", "speak more confidently", "keep a journal",
    "reduce screen time", "learn touch typing", "remember names", "cook for a large group",
]

PROBLEMS = [
    "my neighbor plays loud music late at night", "I forgot a friend's birthday", "I have too many meetings",
    "my code works on my machine but not on the server", "I feel tired every afternoon",
    "my team disagrees about a deadline", "I want to change careers but I am nervous",
    "my bread never rises", "my laptop is very slow", "I have an exam in a week and I am behind",
    "I get nervous before presentations", "my houseplant has yellow leaves", "I spend too much on food",
    "I cannot decide between two job offers", "my dog barks at visitors", "I keep losing my keys",
]

RECIPIENTS = ["my landlord", "a colleague", "my manager", "a customer", "a teacher", "a neighbor", "a hotel"]
MATTERS = [
    "a broken heater", "a delayed project", "a day off next week", "a late delivery", "a meeting time",
    "a noisy party", "a refund", "a thank-you for their help", "a change of address", "a booking",
]

PAIRS = [
    ("cats", "dogs"), ("tea", "coffee"), ("Python", "JavaScript"), ("trains", "planes"),
    ("renting", "buying a home"), ("e-books", "paper books"), ("running", "swimming"),
    ("solar power", "wind power"), ("SQL databases", "NoSQL databases"), ("summer", "winter"),
    ("city life", "country life"), ("laptops", "desktop computers"), ("TCP", "UDP"),
    ("baking", "frying"), ("mountains", "beaches"), ("lists", "tuples in Python"), ("weather", "climate"),
]

PATTERNS = {
    "explain": [
        "Explain {topic} in simple terms.", "How does {topic} work?", "What is {topic} and why does it matter?",
        "Give a short overview of {topic} for a beginner.", "Explain {topic} to a ten-year-old.",
        "What are the most common misconceptions about {topic}?", "Why is {topic} important?",
        "Describe the history of {topic} in a few paragraphs.", "What should everyone know about {topic}?",
    ],
    "list": [
        "List five interesting facts about {topic}.", "What are the pros and cons of {topic}?",
        "Give me a list of ten questions to learn more about {topic}.",
        "What are the key terms someone should know about {topic}? Define each briefly.",
        "List the main steps to get started with {topic}.", "Name some books or resources about {topic}.",
    ],
    "story": [
        "Write a short story about {person} who {situation}.", "Tell me a bedtime story about {person}.",
        "Write the opening paragraph of a novel about {person}.", "Write a funny story about {person}.",
    ],
    "poem": [
        "Write a poem about {thing}.", "Write a haiku about {thing}.", "Write a short rhyming poem about {thing}.",
        "Write a song verse about {thing}.", "Describe {thing} in a few vivid sentences.",
    ],
    "code": [
        "Write a {lang} function that {code}.", "How do I write a program in {lang} that {code}?",
        "Show me {lang} code that {code}, and explain how it works.",
        "Write a {lang} function that {code}, with a few test cases.",
    ],
    "code_explain": [
        "Explain {topic} with a small code example in {lang}.", "What are common mistakes with {topic} in {lang}?",
    ],
    "advice": [
        "How can I {goal}?", "Give me practical tips to {goal}.", "I want to {goal}. Where should I start?",
        "Make a one-week plan to help me {goal}.", "What habits help people {goal}?",
    ],
    "problem": [
        "{problem}. What should I do?", "{problem}. Can you give me some advice?",
        "{problem}. What are my options?",
    ],
    "email": [
        "Write a polite email to {recipient} about {matter}.", "Write a short message to {recipient} about {matter}.",
    ],
    "compare": [
        "Compare {a} and {b}.", "What are the differences between {a} and {b}?",
        "Which is better for a beginner, {a} or {b}? Explain.", "Give the pros and cons of {a} versus {b}.",
    ],
}

CODE_TOPICS = ["recursion", "hash tables", "binary search", "sorting algorithms", "regular expressions",
               "unit testing", "debugging", "JSON", "APIs", "error handling", "classes and objects",
               "loops", "closures", "string formatting", "reading files", "dictionaries"]

WEIGHTS = {"explain": 5, "list": 3, "story": 2, "poem": 1, "code": 3, "code_explain": 1, "advice": 2,
           "problem": 1, "email": 1, "compare": 1}


def make(kind, rng):
    pat = rng.choice(PATTERNS[kind])
    fill = dict(topic=rng.choice(TOPICS), person=rng.choice(PEOPLE), situation=rng.choice(SITUATIONS),
                thing=rng.choice(THINGS), lang=rng.choice(LANGUAGES), code=rng.choice(CODE_TASKS),
                goal=rng.choice(GOALS), problem=rng.choice(PROBLEMS), recipient=rng.choice(RECIPIENTS),
                matter=rng.choice(MATTERS))
    if kind == "code_explain":
        fill["topic"] = rng.choice(CODE_TOPICS)
    if kind == "compare":
        fill["a"], fill["b"] = rng.choice(PAIRS)
    text = pat.format(**fill)
    return text[0].upper() + text[1:]


def bench_prompts():
    """The user texts of the benchmark prompt sets (bench/prompts/*.jsonl)."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "prompts")
    texts = set()
    for path in glob.glob(os.path.join(root, "*.jsonl")):
        with open(path) as f:
            texts.update(json.loads(line).get("user", "") for line in f if line.strip())
    return texts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "prompts.jsonl"))
    ap.add_argument("--n", type=int, default=4000, help="number of distinct prompts")
    ap.add_argument("--seed", type=int, default=19)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    kinds = [k for k, w in WEIGHTS.items() for _ in range(w)]
    seen, out = bench_prompts(), []
    while len(out) < args.n:
        text = make(rng.choice(kinds), rng)
        if text not in seen:
            seen.add(text)
            out.append(text)
    with open(args.out, "w") as f:
        for text in out:
            f.write(json.dumps({"prompt": text}) + "\n")
    print(f"wrote {len(out)} prompts to {args.out}")


if __name__ == "__main__":
    main()
