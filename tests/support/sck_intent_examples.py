"""Labelled questions for the rule-based intent classifier (transforms/sck/intent.py),
written for this project, ten per intent (NFQA's six non-factoid categories and
Factoid). All of them were written before the rules, but the rules were written
with these questions in view: the accuracy on them shows the rules do what
they say, not how well they generalise.
"""

DEVELOPMENT = {
    "instruction": [
        "How do I reset my router to factory settings?",
        "How to bake sourdough bread at home?",
        "What are the steps to apply for a passport?",
        "How can I remove a stripped screw?",
        "Explain how to set up a Python virtual environment.",
        "What is the best way to clean a cast iron pan?",
    ],
    "reason": [
        "Why is the sky blue?",
        "Why do cats purr?",
        "What causes inflation to rise?",
        "How come airplanes leave white trails in the sky?",
        "What is the reason for leap years?",
        "Why did the Roman Empire fall?",
    ],
    "evidence-based": [
        "What is photosynthesis?",
        "How does a vaccine train the immune system?",
        "What does the term opportunity cost mean?",
        "Describe the structure of a plant cell.",
        "What are the symptoms of vitamin D deficiency?",
        "How do black holes form?",
    ],
    "comparison": [
        "What is the difference between soups and stews?",
        "Compare these iPhone 13, Pixel 6, and Galaxy S23",
        "Which is better for beginners, Python or Java?",
        "How does a crocodile differ from an alligator?",
        "Is renting cheaper than buying a house?",
        "Tea vs coffee: which has more caffeine?",
    ],
    "experience": [
        "Have you ever traveled to Japan alone?",
        "What was your first job like?",
        "Has anyone here tried the keto diet?",
        "Which laptop would you recommend for a college student?",
        "I moved to a new city last year and felt lonely; how did you make friends?",
        "What is it like to work night shifts?",
    ],
    "debate": [
        "Do you think social media does more harm than good?",
        "Should the death penalty be abolished?",
        "Is it ethical to eat meat?",
        "Will artificial intelligence replace most jobs?",
        "Is it right for governments to censor the internet?",
        "What is your opinion on nuclear power?",
    ],
    "factoid": [
        "Who wrote Pride and Prejudice?",
        "When did World War II end?",
        "Where is the Eiffel Tower?",
        "How many moons does Mars have?",
        "What's the application area for router?",
        "What is the capital of Australia?",
    ],
}

MORE = {
    "instruction": [
        "How should I prepare for a job interview?",
        "What steps do I follow to change a flat tire?",
        "How can you make cold brew coffee?",
        "Tell me how to train a puppy to sit.",
    ],
    "reason": [
        "Why do leaves change color in autumn?",
        "What makes bread rise?",
        "Why are flamingos pink?",
        "What is the cause of tides?",
    ],
    "evidence-based": [
        "How does the stock market work?",
        "What are the effects of sleep deprivation?",
        "Explain the theory of evolution.",
        "What is machine learning?",
    ],
    "comparison": [
        "Which is healthier, brown rice or white rice?",
        "What are the differences between a virus and bacteria?",
        "iPad or laptop for taking notes?",
        "How is a hurricane different from a tornado?",
    ],
    "experience": [
        "Have you ever been scuba diving?",
        "What did you think of your first marathon?",
        "Can anyone recommend a good hiking trail near Denver?",
        "How was your experience with online dating?",
    ],
    "debate": [
        "Should college education be free?",
        "Do you believe in ghosts?",
        "Is it wrong to lie to protect someone's feelings?",
        "Are video games bad for children?",
    ],
    "factoid": [
        "Who painted the Mona Lisa?",
        "What year did the Berlin Wall fall?",
        "How tall is Mount Everest?",
        "Which planet is closest to the sun?",
    ],
}


LABELLED = {intent: DEVELOPMENT[intent] + MORE[intent] for intent in DEVELOPMENT}
