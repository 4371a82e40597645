#!/usr/bin/env python3
"""tools/train-drafter/make_prompts: writes prompts.jsonl, the open-ended chat prompts that `bee train-data`
answers to make drafter training data.

Every word below was written for this project (topic seeds and request patterns, combined by a seeded random
generator), so the prompt set is the project's own work under the project's licence: nothing is copied from a
data set. The output is deterministic: running it again gives the same file. The prompts of
bench/prompts/*.jsonl are never written, so a head is never trained on the prompts it is benchmarked on.

    python3 tools/train-drafter/make_prompts.py [--out tools/train-drafter/prompts.jsonl] [--n 7000]
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

PART_1 = 4000  # prompts from the first generator; those after it come from part 2

WEIGHTS = {"explain": 5, "list": 3, "story": 2, "poem": 1, "code": 3, "code_explain": 1, "advice": 2,
           "problem": 1, "email": 1, "compare": 1}


# Part 2 (prompts 4001 on): the first 4000 prompts stay exactly as they were (a dump grows by --resume), the
# rest draw from wider lists and request patterns, with more stories, descriptions and plans, so a head sees more
# kinds of requests than the first generator's templates.
MORE_TOPICS = [
    "the history of chocolate", "tea ceremonies", "board games", "origami", "knitting", "woodworking",
    "sourdough starters", "cheese making", "street food", "street art", "graffiti", "architecture in Rome",
    "castles", "pyramids", "lighthouses", "canals", "trains", "sailing", "submarines", "hot air balloons",
    "airplanes", "helicopters", "rockets", "satellites", "the International Space Station", "comets",
    "meteor showers", "eclipses", "northern lights", "auroras on Jupiter", "penguins", "elephants", "wolves",
    "owls", "ants", "butterflies", "spiders", "sharks", "dolphins", "frogs", "mushrooms", "moss", "trees",
    "forests", "wetlands", "rivers", "lakes", "caves", "islands", "the Arctic", "Antarctica", "the Sahara",
    "the Amazon river", "the Himalayas", "tea plantations", "vineyards", "farming", "irrigation", "soil",
    "seeds", "pollination", "food waste", "nutrition labels", "vitamins", "sugar", "salt", "allergies",
    "the common cold", "fever", "posture", "eye strain", "hearing", "dreams", "laughter", "emotions",
    "kindness", "gratitude", "curiosity", "creativity", "boredom", "loneliness", "confidence", "courage",
    "honesty", "teamwork", "leadership", "decision making", "negotiation", "customer service", "sales",
    "accounting", "taxes", "insurance", "mortgages", "saving for retirement", "charity", "economics",
    "supply and demand", "trade", "currency", "banks", "cryptocurrency", "advertising", "newspapers",
    "radio", "television", "podcasts", "video games", "social media", "online shopping", "email etiquette",
    "typography", "logo design", "color theory", "interior design", "fashion", "recycled clothing",
    "museums", "libraries", "schools", "homework", "exams", "note taking", "speed reading", "handwriting",
    "sign language", "translation", "dictionaries", "the alphabet", "grammar", "punctuation", "idioms",
    "folk songs", "opera", "drums", "the piano", "the violin", "choirs", "dance", "ballet", "theater",
    "puppets", "magic tricks", "circuses", "comedy", "cartoons", "comic books", "detective novels",
    "myths about the moon", "legends of the sea", "ancient Greece", "the Vikings", "the Maya", "the Aztecs",
    "samurai", "knights", "pirates", "explorers", "the Age of Sail", "the steam engine", "the telephone",
    "the light bulb", "photography's early days", "vaccination campaigns", "hospitals", "ambulances",
    "firefighters", "police work", "courts", "elections", "democracy", "human rights", "city councils",
    "traffic lights", "roundabouts", "bicycles in cities", "car maintenance", "tires", "fuel efficiency",
    "home repairs", "plumbing", "painting a room", "insulation", "heat pumps", "smart homes", "robot vacuums",
    "password managers", "backups", "computer viruses", "phishing", "encryption", "keyboards", "monitors",
    "spreadsheets for budgeting", "data visualization", "maps and scale", "weather balloons", "thunderstorms",
    "lightning", "fog", "frost", "heat waves", "droughts", "floods", "tsunamis", "avalanches", "wildfires",
]

MORE_PEOPLE = [
    "a grandmother who runs a bakery", "a boy who wants to be a pilot", "a cat who lives in a library",
    "a knight who is afraid of the dark", "a princess who builds robots", "a wizard who lost his spellbook",
    "a small fox in a big city", "a farmer and her clever goat", "a sailor and a friendly whale",
    "a teacher on her last day of school", "a girl who collects stones", "a robot who wants to dance",
    "a bear who cannot sleep", "a clockmaker in an old town", "a young chef", "a postman in the mountains",
    "a painter who paints only the sea", "a mouse who wants to fly", "twin sisters", "an old dog and a puppy",
    "a pirate who hates water", "a girl and her grandfather", "a village of tiny people", "a brave little boat",
    "an owl who gives advice", "a student who cannot find her homework", "a firefighter", "a doctor in space",
    "a giant who is very shy", "a unicorn who is tired of being special", "a lonely lighthouse",
    "a penguin who wants to see the desert", "a team of young scientists", "a traveling musician",
    "a scarecrow who makes friends with crows", "a queen who cannot sing", "a tailor and a magic needle",
]

MORE_SITUATIONS = [
    "goes on a long journey", "finds a door in the forest", "makes an unlikely friend", "loses their way home",
    "has to win a race", "discovers they have a special power", "must protect a village", "learns to be brave",
    "gets lost in a storm", "finds a treasure that is not gold", "helps a lost animal", "builds a new home",
    "enters a baking contest", "moves to a new town", "starts a new school", "solves a mystery at a museum",
    "finds a message in a bottle", "is chosen for an important mission", "tries to catch a thief",
    "plants a magic seed", "spends a night in a haunted house", "meets a character from a book",
]

MORE_THINGS = [
    "a thunderstorm", "the ocean at dawn", "a forest after rain", "an empty beach", "a snowy village",
    "a sunflower field", "a cup of tea", "a childhood memory", "the night sky", "an old photograph",
    "a bird singing", "a winter morning", "a harbor", "a lighthouse", "a desert at night", "the first day of spring",
    "a long road", "a kitten", "a waterfall", "fireflies", "a grandmother's kitchen", "a school playground",
]

MORE_GOALS = [
    "learn to swim as an adult", "start running", "eat more vegetables", "wake up earlier", "learn to play chess",
    "grow herbs on a balcony", "be more patient", "plan a wedding on a budget", "write a book", "learn to sew",
    "start a podcast", "get better at math", "stay calm in traffic", "make a website", "learn photography",
    "cook healthy meals quickly", "train my puppy", "save for a vacation", "take better notes",
]

PLACES = [
    "Paris", "Tokyo", "a small mountain village", "the seaside", "New York", "a national park", "Rome",
    "a desert oasis", "a rainy island", "Barcelona", "a lake in the forest", "London", "a farm", "the countryside",
]

GENRES = ["fantasy", "science fiction", "mystery", "adventure", "fairy tale", "ghost story", "comedy", "fable"]

PATTERNS_2 = {
    "explain": PATTERNS["explain"] + [
        "Tell me about {topic}.", "What is the most interesting thing about {topic}?", "Why do people care about {topic}?",
        "How has {topic} changed over time?", "What would the world be like without {topic}?",
        "Explain {topic} simply.", "What can we learn from {topic}?",
    ],
    "list": PATTERNS["list"] + [
        "Give me three fun facts about {topic}.", "What are some surprising things about {topic}?",
        "Give me some ideas for a school project about {topic}.",
    ],
    "story": PATTERNS["story"] + [
        "Tell me a story about {person}.", "Write a short story about {person} who {situation}.",
        "Tell me a {genre} story about {person} who {situation}.",
        "Write a short {genre} story set in {place}.", "Write a story for children about {person}.",
        "Write a short story that begins in {place}.",
    ],
    "poem": PATTERNS["poem"] + [
        "Write a short poem about {thing} for a child.", "Write a free verse poem about {thing}.",
        "Write four lines about {thing}.", "Describe {thing} as if it were a person.",
    ],
    "advice": PATTERNS["advice"] + [
        "What is the best way to {goal}?",
        "What are the first three things I should do to {goal}?",
    ],
    "plan": [
        "Plan a three-day trip to {place}.",
        "What should I see on a weekend in {place}?", "Describe a perfect day in {place}.",
        "Make a packing list for a trip to {place}.", "Plan a birthday party with a {genre} theme.",
    ],
    "describe": [
        "Describe {place} in the early morning.", "What is daily life like in {place}?",
        "Describe a day in the life of {person}.", "Describe what {person} sees when they wake up.",
    ],
}

WEIGHTS_2 = {"explain": 4, "list": 2, "story": 4, "poem": 2, "code": 2, "code_explain": 1, "advice": 2,
             "problem": 1, "email": 1, "compare": 1, "plan": 1, "describe": 1}


def make(kind, rng, part=1):
    patterns = PATTERNS if part == 1 else {**PATTERNS, **PATTERNS_2}
    pat = rng.choice(patterns[kind])
    topics, people, situations = TOPICS, PEOPLE, SITUATIONS
    things, goals = THINGS, GOALS
    if part == 2:
        topics, people, situations = TOPICS + MORE_TOPICS, PEOPLE + MORE_PEOPLE, SITUATIONS + MORE_SITUATIONS
        things, goals = THINGS + MORE_THINGS, GOALS + MORE_GOALS
    fill = dict(topic=rng.choice(topics), person=rng.choice(people), situation=rng.choice(situations),
                thing=rng.choice(things), lang=rng.choice(LANGUAGES), code=rng.choice(CODE_TASKS),
                goal=rng.choice(goals), problem=rng.choice(PROBLEMS), recipient=rng.choice(RECIPIENTS),
                matter=rng.choice(MATTERS))
    if part == 2:
        fill.update(place=rng.choice(PLACES), genre=rng.choice(GENRES))
    if kind == "code_explain":
        fill["topic"] = rng.choice(CODE_TOPICS)
    if kind == "compare":
        fill["a"], fill["b"] = rng.choice(PAIRS)
    text = pat.format(**fill)
    return text[0].upper() + text[1:]


def words(text):
    return set(text.lower().replace(",", " ").replace(".", " ").replace("?", " ").split())


def near_bench(text, bench):
    """True when the word sets of `text` and a benchmark prompt overlap by half or more (Jaccard): part 2 keeps away
    from paraphrases of the benchmark prompts, not only from their exact texts."""
    w = words(text)
    return any(len(w & b) >= 0.5 * len(w | b) for b in bench)


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
    ap.add_argument("--n", type=int, default=7000, help="number of distinct prompts")
    ap.add_argument("--seed", type=int, default=19)
    args = ap.parse_args()
    seen, out = bench_prompts(), []
    bench = [words(t) for t in seen]
    for part, weights, seed, end in ((1, WEIGHTS, args.seed, min(args.n, PART_1)),
                                     (2, WEIGHTS_2, args.seed + 1, args.n)):
        rng = random.Random(seed)
        kinds = [k for k, w in weights.items() for _ in range(w)]
        while len(out) < end:
            text = make(rng.choice(kinds), rng, part)
            if text not in seen and not (part == 2 and near_bench(text, bench)):
                seen.add(text)
                out.append(text)
    with open(args.out, "w") as f:
        for text in out:
            f.write(json.dumps({"prompt": text}) + "\n")
    print(f"wrote {len(out)} prompts to {args.out}")


if __name__ == "__main__":
    main()
