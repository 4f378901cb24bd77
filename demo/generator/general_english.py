"""Write a small sample of everyday English: the demo's general-domain corpus.

The demo learns a "general" vocabulary from this text with the same vocabulary step as
its biomedical ones, so the diagnostics can show what the papers show at scale: a
general vocabulary shatters biomedical entity names that a domain vocabulary keeps
whole. Paragraphs of news, sports, cooking, travel, weather, business, technology and
home life come from our own templates and word lists with a fixed seed; none of the
biomedical lexicon is used.

Output: one document per paragraph, paragraphs separated by a blank line, UTF-8.

Usage: python demo/generator/general_english.py --out demo/raw_source/general/general.txt
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

SEED = 20240611
DOCUMENTS = 420

FIRST = [
    "Anna",
    "Ben",
    "Carlos",
    "Diana",
    "Emma",
    "Felix",
    "Grace",
    "Hugo",
    "Irene",
    "Jack",
    "Karen",
    "Liam",
    "Maria",
    "Noah",
    "Olivia",
    "Peter",
    "Quinn",
    "Rosa",
    "Samuel",
    "Tara",
    "Umar",
    "Vera",
    "William",
    "Xavier",
    "Yasmin",
    "Zoe",
    "Oscar",
    "Leila",
    "Martin",
    "Sofia",
    "Daniel",
    "Chloe",
]
LAST = [
    "Smith",
    "Jones",
    "Garcia",
    "Brown",
    "Miller",
    "Davis",
    "Wilson",
    "Moore",
    "Taylor",
    "Anderson",
    "Thomas",
    "Martin",
    "Clark",
    "Lewis",
    "Walker",
    "Hall",
    "Young",
    "King",
    "Wright",
    "Scott",
    "Green",
    "Baker",
    "Adams",
    "Nelson",
    "Carter",
    "Turner",
    "Parker",
    "Evans",
    "Edwards",
    "Collins",
]
CITIES = [
    "London",
    "Paris",
    "Madrid",
    "Rome",
    "Berlin",
    "Vienna",
    "Lisbon",
    "Dublin",
    "Oslo",
    "Prague",
    "Chicago",
    "Boston",
    "Seattle",
    "Denver",
    "Toronto",
    "Montreal",
    "Sydney",
    "Melbourne",
    "Auckland",
    "Tokyo",
    "Osaka",
    "Seoul",
    "Singapore",
    "Nairobi",
    "Cairo",
    "Lima",
    "Santiago",
    "Havana",
    "Edinburgh",
    "Barcelona",
    "Amsterdam",
    "Copenhagen",
    "Stockholm",
    "Helsinki",
    "Athens",
    "Istanbul",
]
TEAMS = [
    "Rovers",
    "United",
    "Rangers",
    "Wanderers",
    "Athletic",
    "Hornets",
    "Eagles",
    "Falcons",
    "Lions",
    "Tigers",
    "Wolves",
    "Sharks",
    "Giants",
    "Pirates",
    "Comets",
    "Mariners",
    "Thunder",
    "Storm",
]
SPORTS = [
    "football",
    "basketball",
    "tennis",
    "cricket",
    "rugby",
    "hockey",
    "baseball",
    "volleyball",
    "cycling",
    "rowing",
    "swimming",
    "golf",
    "marathon",
    "badminton",
    "handball",
    "sailing",
]
FOODS = [
    "tomatoes",
    "onions",
    "garlic",
    "potatoes",
    "carrots",
    "mushrooms",
    "spinach",
    "lemons",
    "apples",
    "pears",
    "strawberries",
    "blueberries",
    "peppers",
    "zucchini",
    "eggplant",
    "cabbage",
    "chickpeas",
    "lentils",
    "noodles",
    "rice",
    "bread",
    "butter",
    "cheese",
    "yogurt",
    "honey",
    "almonds",
    "walnuts",
    "salmon",
    "chicken",
    "beef",
    "pork",
    "shrimp",
    "tofu",
    "basil",
    "parsley",
    "rosemary",
    "thyme",
    "cinnamon",
    "vanilla",
    "chocolate",
    "flour",
    "sugar",
    "olives",
    "avocado",
    "pumpkin",
    "celery",
]
DISHES = [
    "soup",
    "stew",
    "salad",
    "pie",
    "curry",
    "risotto",
    "omelette",
    "pancakes",
    "lasagne",
    "casserole",
    "sandwich",
    "pizza",
    "tart",
    "crumble",
    "muffins",
    "biscuits",
    "dumplings",
    "burrito",
    "paella",
]
COOKING = [
    "chop",
    "slice",
    "dice",
    "stir",
    "whisk",
    "simmer",
    "roast",
    "bake",
    "grill",
    "fry",
    "boil",
    "season",
    "knead",
    "marinate",
    "drizzle",
    "sprinkle",
    "blend",
    "toast",
    "steam",
    "glaze",
]
PLACES = [
    "museum",
    "cathedral",
    "castle",
    "harbour",
    "market",
    "gallery",
    "garden",
    "bridge",
    "beach",
    "lighthouse",
    "palace",
    "library",
    "theatre",
    "stadium",
    "square",
    "park",
    "village",
    "valley",
    "mountain",
    "lake",
    "island",
    "forest",
    "canyon",
    "waterfall",
    "vineyard",
    "monastery",
    "fortress",
]
TRANSPORT = ["train", "ferry", "bus", "tram", "bicycle", "scooter", "taxi", "plane", "coach", "boat"]
WEATHER = [
    "sunny",
    "cloudy",
    "windy",
    "rainy",
    "foggy",
    "stormy",
    "snowy",
    "humid",
    "chilly",
    "mild",
    "freezing",
    "scorching",
    "drizzly",
    "overcast",
    "breezy",
    "frosty",
]
COMPANIES = [
    "Northwind",
    "Bluebird",
    "Silverline",
    "Greenfield",
    "Redstone",
    "Brightway",
    "Oakwood",
    "Harbourview",
    "Summit",
    "Riverside",
    "Pinecrest",
    "Goldleaf",
    "Ironbridge",
    "Westgate",
]
PRODUCTS = [
    "smartphones",
    "laptops",
    "headphones",
    "cameras",
    "bicycles",
    "furniture",
    "sneakers",
    "jackets",
    "watches",
    "tablets",
    "printers",
    "kettles",
    "vacuum cleaners",
    "televisions",
    "backpacks",
    "umbrellas",
    "guitars",
    "toys",
    "books",
    "board games",
    "garden tools",
]
TECH = [
    "software",
    "update",
    "app",
    "website",
    "network",
    "battery",
    "screen",
    "keyboard",
    "password",
    "browser",
    "server",
    "database",
    "cloud",
    "robot",
    "drone",
    "satellite",
    "chip",
    "algorithm",
    "download",
    "subscription",
    "platform",
    "feature",
    "interface",
    "streaming",
    "podcast",
]
HOME = [
    "kitchen",
    "garage",
    "attic",
    "balcony",
    "bedroom",
    "hallway",
    "basement",
    "porch",
    "fence",
    "roof",
    "window",
    "carpet",
    "curtains",
    "sofa",
    "bookshelf",
    "fireplace",
    "staircase",
    "lawn",
]
JOBS = [
    "teacher",
    "mayor",
    "chef",
    "pilot",
    "farmer",
    "engineer",
    "journalist",
    "architect",
    "plumber",
    "electrician",
    "lawyer",
    "librarian",
    "firefighter",
    "carpenter",
    "gardener",
    "musician",
    "painter",
    "photographer",
    "baker",
    "shopkeeper",
    "coach",
    "referee",
    "captain",
    "director",
    "spokesperson",
]
ADJ = [
    "busy",
    "quiet",
    "crowded",
    "famous",
    "ancient",
    "modern",
    "colourful",
    "peaceful",
    "lively",
    "charming",
    "remote",
    "cosy",
    "spacious",
    "elegant",
    "rustic",
    "bustling",
    "historic",
    "friendly",
    "delicious",
    "crunchy",
    "tender",
    "spicy",
    "fragrant",
    "generous",
    "affordable",
    "expensive",
    "reliable",
    "surprising",
    "impressive",
    "disappointing",
    "exciting",
    "relaxing",
    "careful",
]
VERBS_PAST = [
    "announced",
    "celebrated",
    "criticised",
    "welcomed",
    "postponed",
    "opened",
    "closed",
    "launched",
    "cancelled",
    "approved",
    "rejected",
    "completed",
    "visited",
    "praised",
    "organised",
    "renovated",
    "expanded",
    "replaced",
    "discovered",
    "recorded",
    "scored",
    "defeated",
    "finished",
    "improved",
    "travelled",
    "explored",
    "borrowed",
    "delivered",
]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
COUNTRIES = [
    "France",
    "Spain",
    "Italy",
    "Germany",
    "Portugal",
    "Ireland",
    "Norway",
    "Sweden",
    "Finland",
    "Denmark",
    "Poland",
    "Greece",
    "Turkey",
    "Egypt",
    "Kenya",
    "Morocco",
    "Brazil",
    "Argentina",
    "Chile",
    "Peru",
    "Mexico",
    "Canada",
    "Japan",
    "Korea",
    "India",
    "Thailand",
    "Vietnam",
    "Australia",
]
HOBBIES = [
    "knitting",
    "fishing",
    "hiking",
    "chess",
    "gardening",
    "painting",
    "photography",
    "climbing",
    "birdwatching",
    "pottery",
    "woodwork",
    "sewing",
    "dancing",
    "singing",
    "juggling",
    "camping",
    "surfing",
    "skating",
    "skiing",
    "kayaking",
    "baking",
    "reading",
    "writing",
    "origami",
    "archery",
]
ANIMALS = [
    "dog",
    "cat",
    "horse",
    "rabbit",
    "hamster",
    "parrot",
    "goat",
    "sheep",
    "cow",
    "donkey",
    "fox",
    "badger",
    "hedgehog",
    "squirrel",
    "owl",
    "swan",
    "duck",
    "goose",
    "dolphin",
    "whale",
    "seal",
    "penguin",
    "giraffe",
    "elephant",
    "zebra",
    "kangaroo",
    "koala",
    "otter",
    "beaver",
    "deer",
]
CLOTHES = [
    "scarf",
    "sweater",
    "raincoat",
    "boots",
    "sandals",
    "gloves",
    "hat",
    "cardigan",
    "trousers",
    "skirt",
    "dress",
    "shirt",
    "blouse",
    "waistcoat",
    "overalls",
    "pyjamas",
    "slippers",
    "socks",
]
INSTRUMENTS = [
    "piano",
    "violin",
    "cello",
    "trumpet",
    "flute",
    "clarinet",
    "saxophone",
    "drums",
    "harp",
    "accordion",
    "banjo",
    "ukulele",
    "trombone",
    "oboe",
    "harmonica",
    "mandolin",
]
SUBJECTS = [
    "history",
    "geography",
    "chemistry",
    "physics",
    "mathematics",
    "literature",
    "economics",
    "philosophy",
    "astronomy",
    "music",
    "drama",
    "languages",
    "art",
    "architecture",
    "engineering",
]
COLOURS = [
    "red",
    "orange",
    "yellow",
    "green",
    "blue",
    "purple",
    "pink",
    "brown",
    "grey",
    "black",
    "white",
    "silver",
    "golden",
    "turquoise",
    "crimson",
    "navy",
    "beige",
    "lilac",
    "scarlet",
    "ivory",
]
NOUNS = """
ability account actor address advice agreement airport album answer apartment appetite argument army
arrival article artist audience author autumn award baby bakery balloon band bank bargain basket battle
beard bell belt bench bill birthday blanket block board bottle branch breakfast brick bride bucket
budget building bundle cabin cable cafe calendar campaign candle canoe canvas career carnival cart
cartoon cashier cellar century ceremony chair champion channel chapter charity chimney choir circus
citizen classroom cliff clock closet cloud coast coffee collar college comedy committee community
competition concert conference contest conversation cottage couch council counter courage cousin
crane crew crowd cupboard customer dancer daughter deadline debate decade desert desk dessert diary
dinner discount district document doorway dragon drawer dream driver election elevator empire entrance
envelope episode essay estate evening exhibition experience explorer factory fair family fashion
feast festival fiction field film flag flight floor flower fountain fridge friendship frog fuel funeral
gadget gallery gate generation gift glass government graduate grandfather grocery guest guitar habit
hammer headline helmet highway holiday honour horizon hospitality household hunger husband idea
invitation island jacket jewel journey judge jungle kettle keyboard kingdom kitten ladder landlord
landscape language laughter lawn leader lecture legend letter lifestyle lighthouse lobby luggage lunch
magazine magnet manager manner mansion marriage meadow medal memory merchant message midnight minister
mirror mission moment monument mood morning motorway mountain movie mystery nation neighbour nephew
newspaper niece novel ocean office orchard orchestra painting pancake parade parcel passenger passport
pavement penguin pension performance picnic pillow planet playground pocket poem poet politician
pottery present president prize profit promise puzzle queen question queue quilt radio railway
reception recipe record reunion rhythm ribbon riddle rival romance saddle sailor sandwich schedule
scholar scissors season secret sentence shelf shelter shoulder signal silence sister skyline slogan
soldier souvenir speech spoon spring stamp statue storm story stranger street student suitcase summer
sunrise sunset supper surprise sweater symphony tailor tavern teapot telescope temple tenant ticket
tournament tower tradition traffic treasure tunnel twin uncle uniform universe vacation valley victory
village violin visitor volunteer voyage wagon waiter wallet wardrobe wedding weekend whistle widow
winner winter witness workshop yard youth alley arcade attic bakery ballroom barber bay beach bistro
boutique brewery bridge bus canal carpark cathedral chamber cinema clinic cloister courtyard creek
dairy deck dock dungeon embassy farmhouse ferryboat fishmonger forge garrison glade greengrocer
grove gymnasium hangar hatchery heath hostel inn jetty kiosk lagoon lane laundry lodge marina
marsh mill moor observatory outpost pantry pasture pavilion pier plaza pond prairie promenade pub
quay ranch reservoir ridge riverbank salon sawmill shack shipyard shore stable studio suburb summit
terrace thicket trench veranda warehouse wharf woodland
""".split()
VERBS = """
accepted admired adopted advised agreed allowed answered applauded arranged arrived asked attended
baked believed belonged blamed boarded borrowed bought bounced breathed brought built burned carried
chased cheered chose cleaned climbed collected compared complained cooked copied counted covered
crashed created crossed cried danced decided decorated described designed disappeared divided dreamed
dressed dropped earned emptied encouraged enjoyed entered escaped examined expected explained fetched
filled fixed floated folded followed forgave forgot gathered giggled glanced grabbed greeted grew
guessed guided handed hugged hurried ignored imagined invented invited joined jumped kept kicked kissed
knitted knocked laughed learned lifted listened locked looked loved managed marched married measured
mended missed mixed moved noticed obeyed offered ordered packed painted parked passed paused performed
picked planned planted played pointed polished poured prepared pretended printed promised protected
pulled punished pushed questioned raced rained reached received recognised remembered repaired repeated
replied rescued returned rode rushed sailed saved searched shared shouted signed skipped smiled sneezed
solved sorted spelled splashed started stayed stopped stretched studied succeeded suggested supported
surprised swam talked tasted taught thanked tickled touched trained trusted tumbled typed understood
unlocked visited waited walked wandered warned washed watched waved whispered wished wondered worried
wrapped wrote yawned
""".split()
THINGS = """
acorn anchor antique apron arrow ashtray axe backyard bagpipe bakehouse bamboo bandstand banner barn
barrel basin bathtub beacon beehive belfry bicycle billboard binoculars birdhouse blender blossom
bonfire bookmark boulder bouquet bowl bracelet briefcase broom bubble buckle bulb bungalow buoy
butterfly button cabbage cactus cake camel candlestick cannon canyon caravan cardboard carousel
carriage castle catalogue cauldron chalk chandelier chapel cherry chestnut chisel clover cobweb
coconut compass cookbook corridor costume cracker crayon cricket crown crystal cushion daisy dartboard
dinghy doormat doughnut dragonfly drainpipe driftwood dustbin easel eggshell emerald feather ferry
fiddle firework fishbowl flashlight flowerpot footpath fossil frame fudge funnel gazebo gingerbread
globe goblet gondola gramophone greenhouse hairbrush hammock handbag harbour hatbox haystack hedge
hilltop hourglass iceberg igloo inkwell jigsaw jukebox kayak kite lantern lemonade lollipop locket
mailbox mantelpiece marble marmalade mattress meadowland milestone mitten moonlight mosaic mug napkin
necklace nutcracker oar paddle padlock pagoda pamphlet parasol pebble pendulum pepper pinecone pinwheel
pitchfork porcelain postcard pram puddle pumpkin quarry rainbow raincloud rattle rocket rooftop
rowboat sailboat sandcastle satchel saucepan scarecrow seashell seesaw shipwreck signpost skateboard
sledge snowflake snowman spade spinnaker spyglass staircase starfish stepladder stool sundial
sunflower surfboard swing tablecloth tambourine teacup teddy thimble thunderstorm toadstool toffee
toolbox torch tractor trampoline treehouse tricycle trolley trumpet tugboat turnip typewriter
umbrella vase walnut watering weathervane wheelbarrow whirlpool windmill windowsill wreath yacht
""".split()
ADVERBS = """
quickly slowly quietly loudly happily sadly eagerly proudly calmly gently suddenly finally nearly
rarely often always sometimes usually politely bravely carefully honestly warmly brightly softly
patiently cheerfully nervously boldly smoothly neatly briefly openly kindly wisely easily barely
""".split()
ADJ2 = """
amazing anxious awkward beautiful bitter blank bold brave brief broad calm clever clumsy comfortable
curious damp dusty eager empty enormous fancy fierce fluffy foolish fresh gentle giant glad gloomy
graceful grumpy handsome heavy helpful hollow honest huge hungry jolly juicy kind large lazy little
lonely lucky magnificent massive mysterious narrow nervous noisy odd old plain pleasant polite precious
proud rapid rare rich rough round rusty scary shallow shiny silly smooth sparkling steep sticky strange
sturdy sweet tall tidy tiny tough ugly unusual vast warm wealthy weary wide wild wise witty wooden young
ambitious ashamed bashful blissful breezy bumpy chubby crispy
cunning dainty dazzling dreary elderly fearless feeble frantic frosty fuzzy gigantic gleaming glossy
grateful greasy grim hasty hilarious humble icy jagged jittery joyful lavish lofty loyal mellow
merry mighty misty modest moody muddy nimble nosy peculiar perfect plump prickly quaint radiant
ragged rowdy sleepy slippery sly snug soggy sour speedy spotless stormy sunny swift tender thrifty
timid tremendous twinkling vivid wobbly zealous
""".split()
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _news(rng: random.Random) -> list[str]:
    city, job, who = rng.choice(CITIES), rng.choice(JOBS), _person(rng)
    return [
        f"The {job} of {city}, {who}, {rng.choice(VERBS_PAST)} plans for a new "
        f"{rng.choice(PLACES)} on {rng.choice(DAYS)}.",
        f"Residents said the {rng.choice(ADJ)} neighbourhood needed better {rng.choice(TRANSPORT)} connections.",
        f"A council meeting in {rng.choice(MONTHS)} will decide whether the budget of "
        f"{rng.randint(2, 90)} million pounds is approved.",
        f'"We have listened carefully to everyone," {who} told reporters outside the town hall.',
        f"Local shops {rng.choice(VERBS_PAST)} the decision, although some owners worried about parking.",
    ]


def _sports(rng: random.Random) -> list[str]:
    a, b = rng.sample(CITIES, 2)
    ta, tb = rng.sample(TEAMS, 2)
    sa, sb = rng.randint(0, 5), rng.randint(0, 5)
    return [
        f"{a} {ta} {rng.choice(['defeated', 'drew with', 'lost to'])} {b} {tb} "
        f"{sa}-{sb} in a {rng.choice(ADJ)} {rng.choice(SPORTS)} match on "
        f"{rng.choice(DAYS)} evening.",
        f"The {rng.choice(['captain', 'coach', 'goalkeeper', 'striker', 'referee'])} "
        f"{_person(rng)} said the crowd of {rng.randint(3, 80)} thousand made a huge "
        "difference.",
        f"Fans travelled by {rng.choice(TRANSPORT)} from across the region despite the {rng.choice(WEATHER)} weather.",
        f"The next fixture is in {rng.choice(MONTHS)}, when the {ta} host the "
        f"{rng.choice(TEAMS)} at their home stadium.",
    ]


def _cooking(rng: random.Random) -> list[str]:
    f1, f2, f3 = rng.sample(FOODS, 3)
    dish = rng.choice(DISHES)
    return [
        f"This {rng.choice(ADJ)} {f1} {dish} takes about {rng.randint(15, 90)} minutes "
        f"and serves {rng.randint(2, 8)} people.",
        f"First {rng.choice(COOKING)} the {f2} and {rng.choice(COOKING)} the {f3} in a large pan with a little butter.",
        f"Add a pinch of salt, {rng.choice(FOODS)} and {rng.choice(FOODS)}, then "
        f"{rng.choice(COOKING)} gently for {rng.randint(5, 40)} minutes.",
        f"Bake at {rng.choice([160, 180, 190, 200, 220])} degrees until golden, and "
        f"serve with warm {rng.choice(['bread', 'rice', 'potatoes', 'noodles'])}.",
        f"My grandmother always added {rng.choice(FOODS)} to her {dish}, and the kitchen smelled wonderful.",
    ]


def _travel(rng: random.Random) -> list[str]:
    city, place = rng.choice(CITIES), rng.choice(PLACES)
    return [
        f"We arrived in {city} by {rng.choice(TRANSPORT)} early on a {rng.choice(WEATHER)} {rng.choice(DAYS)} morning.",
        f"The {rng.choice(ADJ)} {place} near the old {rng.choice(PLACES)} was our favourite stop of the trip.",
        f"Tickets cost {rng.randint(5, 60)} euros, and the guide explained the history "
        f"of the {rng.choice(PLACES)} in detail.",
        f"In the evening we ate {rng.choice(DISHES)} at a {rng.choice(ADJ)} restaurant "
        f"beside the {rng.choice(['river', 'harbour', 'square', 'lake'])}.",
        f"If you visit in {rng.choice(MONTHS)}, book your hotel early because the city "
        f"gets very {rng.choice(['busy', 'crowded', 'expensive'])}.",
    ]


def _weather(rng: random.Random) -> list[str]:
    city = rng.choice(CITIES)
    return [
        f"Forecasters expect a {rng.choice(WEATHER)} weekend in {city}, with "
        f"temperatures around {rng.randint(-5, 35)} degrees.",
        f"A {rng.choice(['cold front', 'heatwave', 'storm', 'band of rain'])} will move "
        f"in from the {rng.choice(['north', 'south', 'east', 'west'])} on "
        f"{rng.choice(DAYS)}.",
        "Drivers were warned about "
        f"{rng.choice(['ice', 'fog', 'flooding', 'strong winds'])} on the roads near "
        f"the {rng.choice(PLACES)}.",
    ]


def _business(rng: random.Random) -> list[str]:
    co, prod = rng.choice(COMPANIES), rng.choice(PRODUCTS)
    return [
        f"{co} {rng.choice(VERBS_PAST)} a new range of {prod} at a press event in {rng.choice(CITIES)}.",
        f"Sales rose by {rng.randint(2, 40)} percent in the last quarter, the company said in a statement.",
        f"Its chief executive, {_person(rng)}, expects demand for "
        f"{rng.choice(PRODUCTS)} to stay strong until {rng.choice(MONTHS)}.",
        f"Shares in {rng.choice(COMPANIES)} fell slightly after the announcement, while "
        "investors waited for more details.",
    ]


def _technology(rng: random.Random) -> list[str]:
    return [
        f"The latest {rng.choice(TECH)} {rng.choice(['update', 'release', 'version'])} "
        f"makes the {rng.choice(TECH)} faster and easier to use.",
        f"Users can now change their {rng.choice(TECH)} settings from the main "
        f"{rng.choice(['menu', 'screen', 'page'])}.",
        f"Engineers at {rng.choice(COMPANIES)} said the new {rng.choice(TECH)} would "
        f"reach {rng.randint(2, 50)} million customers.",
        f"Some reviewers found the {rng.choice(TECH)} {rng.choice(ADJ)}, while others "
        f"praised the longer {rng.choice(['battery', 'warranty', 'trial'])}.",
    ]


def _home(rng: random.Random) -> list[str]:
    room = rng.choice(HOME)
    return [
        f"Last {rng.choice(DAYS)} we finally painted the {room} a "
        f"{rng.choice(['pale blue', 'warm yellow', 'soft green', 'bright white'])} "
        "colour.",
        f"The {rng.choice(['plumber', 'electrician', 'carpenter', 'gardener'])} came to "
        f"fix the {rng.choice(HOME)} and stayed for a cup of tea.",
        f"Our neighbours {rng.choice(VERBS_PAST)} their {rng.choice(HOME)} and planted "
        f"{rng.choice(['roses', 'tulips', 'sunflowers', 'herbs'])} by the "
        f"{rng.choice(HOME)}.",
        f"The children spent the {rng.choice(WEATHER)} afternoon building a den in the {rng.choice(HOME)}.",
    ]


def _leisure(rng: random.Random) -> list[str]:
    who, hobby = _person(rng), rng.choice(HOBBIES)
    return [
        f"{who} took up {hobby} in {rng.randint(1960, 2024)} after a holiday in {rng.choice(COUNTRIES)}.",
        f"On {rng.choice(DAYS)} evenings the club meets at the {rng.choice(PLACES)} to "
        f"practise {hobby} and {rng.choice(HOBBIES)}.",
        f"Members wear a {rng.choice(COLOURS)} {rng.choice(CLOTHES)} and bring a "
        f"{rng.choice(COLOURS)} {rng.choice(CLOTHES)} in case it turns "
        f"{rng.choice(WEATHER)}.",
        f"Her {rng.choice(ANIMALS)} follows her everywhere, even to "
        f"{rng.choice(INSTRUMENTS)} lessons at the {rng.choice(PLACES)}.",
        f"At school she loved {rng.choice(SUBJECTS)} and {rng.choice(SUBJECTS)}, and "
        f"she still plays the {rng.choice(INSTRUMENTS)} at "
        f"{rng.randint(6, 11)}:{rng.choice(['00', '15', '30', '45'])} every morning.",
    ]


def _nature(rng: random.Random) -> list[str]:
    animal = rng.choice(ANIMALS)
    return [
        f"Volunteers counted {rng.randint(3, 400)} {animal}s along the "
        f"{rng.choice(['coast', 'river', 'valley', 'trail'])} in "
        f"{rng.choice(COUNTRIES)} last {rng.choice(MONTHS)}.",
        f"A young {rng.choice(ANIMALS)} was spotted near the {rng.choice(PLACES)}, to "
        f"the delight of a {rng.choice(ADJ)} crowd.",
        f"The sanctuary, founded in {rng.randint(1890, 2020)}, now cares for a "
        f"{rng.choice(ANIMALS)}, a {rng.choice(ANIMALS)} and several "
        f"{rng.choice(ANIMALS)}s.",
    ]


def _story(rng: random.Random) -> list[str]:
    who, other = _person(rng), rng.choice(FIRST)
    return [
        f"In {rng.randint(1900, 2025)}, {who} {rng.choice(VERBS)} a {rng.choice(ADJ2)} "
        f"{rng.choice(NOUNS)} near the {rng.choice(NOUNS)}.",
        f"{other} {rng.choice(ADVERBS)} {rng.choice(VERBS)} the {rng.choice(ADJ2)} "
        f"{rng.choice(NOUNS)} and {rng.choice(VERBS)} the {rng.choice(NOUNS)}.",
        f"Nobody {rng.choice(VERBS)} how the {rng.choice(NOUNS)} and the "
        f"{rng.choice(NOUNS)} {rng.choice(ADVERBS)} {rng.choice(VERBS)} that "
        f"{rng.choice(['night', 'morning', 'summer', 'winter'])}.",
        f"They found a {rng.choice(THINGS)}, a {rng.choice(THINGS)} and an old "
        f"{rng.choice(THINGS)} in the {rng.choice(HOME)}.",
        f"Years later, the {rng.choice(ADJ2)} {rng.choice(NOUNS)} still "
        f"{rng.choice(['stood', 'waited', 'remained'])} beside the {rng.choice(ADJ2)} "
        f"{rng.choice(NOUNS)}.",
    ]


KINDS = [
    _story,
    _story,
    _story,
    _story,
    _leisure,
    _nature,
    _news,
    _sports,
    _cooking,
    _travel,
    _weather,
    _business,
    _technology,
    _home,
]


def documents(n: int = DOCUMENTS, seed: int = SEED) -> list[str]:
    """``n`` paragraphs of everyday English, the same for the same seed."""
    rng = random.Random(seed)
    docs = []
    for _ in range(n):
        sentences = [s for _ in range(rng.randint(1, 3)) for s in rng.choice(KINDS)(rng)]
        docs.append(" ".join(sentences))
    return docs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="general.txt to write")
    parser.add_argument("--documents", type=int, default=DOCUMENTS)
    args = parser.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n\n".join(documents(args.documents)) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
